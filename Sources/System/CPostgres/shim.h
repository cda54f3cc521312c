// libpq, PostgreSQL's official C client (Debian: libpq-dev; include path from pkg-config `libpq`).
// Only the PostgresStorage module imports this.
#include <libpq-fe.h>
