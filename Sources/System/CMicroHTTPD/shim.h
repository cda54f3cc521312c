// GNU libmicrohttpd, the HTTP server library (Debian: libmicrohttpd-dev 0.9.75; pkg-config
// `libmicrohttpd`). Only the serve command's HTTPDaemon.swift imports this.
//
// MHD_start_daemon and MHD_get_daemon_info are variadic, which Swift cannot call: the inline
// functions below call them with the options the server uses. libmicrohttpd's enums are closed
// C enums, whose Swift spelling depends on the importer's prefix rules: the few values Swift
// needs come from functions here, as plain values.
#ifndef CE_MICROHTTPD_SHIM_H
#define CE_MICROHTTPD_SHIM_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <microhttpd.h>

/// Starts a daemon listening on `host` (a numeric IPv4 or IPv6 address) and `port` (0: a free
/// port, see ce_mhd_bound_port), with one internal epoll thread and suspendable connections;
/// `notify` hears of every connection's start and close.
/// Returns NULL when `host` is not a numeric address (`*bad_host` set to 1) or when the daemon
/// cannot start (the port is taken: errno says why).
static inline struct MHD_Daemon *ce_mhd_start(const char *host, uint16_t port,
                                              MHD_AccessHandlerCallback handler, void *handler_context,
                                              MHD_RequestCompletedCallback completed, void *completed_context,
                                              MHD_NotifyConnectionCallback notify, void *notify_context,
                                              unsigned int connection_limit, unsigned int timeout_seconds,
                                              size_t memory_limit, int *bad_host) {
    struct sockaddr_in v4;
    struct sockaddr_in6 v6;
    const struct sockaddr *address;
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
    *bad_host = 0;
    memset(&v4, 0, sizeof v4);
    memset(&v6, 0, sizeof v6);
    if (inet_pton(AF_INET, host, &v4.sin_addr) == 1) {
        v4.sin_family = AF_INET;
        v4.sin_port = htons(port);
        address = (const struct sockaddr *)&v4;
    } else if (inet_pton(AF_INET6, host, &v6.sin6_addr) == 1) {
        v6.sin6_family = AF_INET6;
        v6.sin6_port = htons(port);
        address = (const struct sockaddr *)&v6;
        flags |= MHD_USE_IPv6;
    } else {
        *bad_host = 1;
        return NULL;
    }
    return MHD_start_daemon(flags, port, NULL, NULL, handler, handler_context,
                            MHD_OPTION_SOCK_ADDR, address,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, completed_context,
                            MHD_OPTION_NOTIFY_CONNECTION, notify, notify_context,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit,
                            MHD_OPTION_END);
}

/// The port the daemon listens on (the one the system chose for port 0); 0 if unknown.
static inline uint16_t ce_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/// MHD_YES and MHD_NO, an access handler's answers.
static inline enum MHD_Result ce_mhd_yes(void) { return MHD_YES; }
static inline enum MHD_Result ce_mhd_no(void) { return MHD_NO; }

/// Why a request ended, as a number (MHD_REQUEST_TERMINATED_*: 0 completed, 1 error,
/// 2 timeout, 3 daemon shutdown, 4 read error, 5 client abort).
static inline int ce_mhd_reason(enum MHD_RequestTerminationCode code) { return (int)code; }

/// Whether a connection notification says it started (1) or closed (0).
static inline int ce_mhd_connection_started(enum MHD_ConnectionNotificationCode code) {
    return code == MHD_CONNECTION_NOTIFY_STARTED;
}

/// The connection's socket, or -1.
static inline int ce_mhd_socket(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

/// 1 when the peer of `socket` has closed the connection (or it broke), 0 while it is open: a
/// peek that does not wait and reads nothing.
static inline int ce_socket_peer_closed(int socket) {
    if (socket < 0) return 0;
    char byte;
    const ssize_t count = recv(socket, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (count == 0) return 1;
    if (count < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
    return 0;
}

/// The request header `name` (case-insensitive), or NULL.
static inline const char *ce_mhd_header(struct MHD_Connection *connection, const char *name) {
    return MHD_lookup_connection_value(connection, MHD_HEADER_KIND, name);
}

/// A response with a copy of `size` bytes at `body` (NULL allowed when size is 0).
static inline struct MHD_Response *ce_mhd_response(const void *body, size_t size) {
    return MHD_create_response_from_buffer(size, (void *)body, MHD_RESPMEM_MUST_COPY);
}

/// A response of unknown size (sent chunked) whose body `reader` produces, `block` bytes at a
/// time at most; `release` runs when libmicrohttpd is done with it.
static inline struct MHD_Response *ce_mhd_stream_response(MHD_ContentReaderCallback reader, void *context,
                                                          MHD_ContentReaderFreeCallback release, size_t block) {
    return MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, block, reader, context, release);
}

/// What a content reader returns at the end of the body.
static inline ssize_t ce_mhd_end_of_stream(void) { return MHD_CONTENT_READER_END_OF_STREAM; }

#endif
