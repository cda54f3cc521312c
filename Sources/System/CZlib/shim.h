// zlib (Debian: zlib1g-dev), for the raw DEFLATE streams and CRC-32s of zip archives.
#include <zlib.h>
