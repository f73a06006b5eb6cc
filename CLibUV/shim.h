#ifndef CLIBUV_SHIM_H
#define CLIBUV_SHIM_H

#include <uv.h>

// Swift cannot cast between C struct pointer types that share a prefix, which is how libuv
// models handle "inheritance". These helpers are the only additions to <uv.h>.

static inline uv_handle_t *clibuv_timer_as_handle(uv_timer_t *timer) { return (uv_handle_t *)timer; }
static inline uv_handle_t *clibuv_async_as_handle(uv_async_t *async) { return (uv_handle_t *)async; }
static inline uv_handle_t *clibuv_idle_as_handle(uv_idle_t *idle) { return (uv_handle_t *)idle; }
static inline uv_handle_t *clibuv_tcp_as_handle(uv_tcp_t *tcp) { return (uv_handle_t *)tcp; }
static inline uv_handle_t *clibuv_signal_as_handle(uv_signal_t *signal) { return (uv_handle_t *)signal; }
static inline uv_stream_t *clibuv_tcp_as_stream(uv_tcp_t *tcp) { return (uv_stream_t *)tcp; }

#endif
