#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H

#include <openssl/err.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

// Swift cannot call OpenSSL's function-like macros; these wrap the few `taskid serve --tls-port`
// uses. Nothing else is added to <openssl/ssl.h>. <openssl/sha.h> is for the ACL file's password
// hashes (Redis's `#<sha256>` rule).

/// Initializes OpenSSL without its exit handler: at exit, OpenSSL would free its global state
/// while the process's other threads (Swift's pool) may still free theirs, which glibc caught as
/// a double free once. The process's memory goes with it anyway.
static inline int copenssl_init_without_exit_handler(void) {
    return OPENSSL_init_ssl(OPENSSL_INIT_NO_ATEXIT, NULL);
}

/// An empty memory BIO reports "retry later" (not end of stream): the socket may bring more.
static inline long copenssl_bio_set_mem_eof_return(BIO *bio, int value) { return BIO_set_mem_eof_return(bio, value); }

/// Encrypted bytes waiting in a memory BIO.
static inline size_t copenssl_bio_pending(BIO *bio) { return BIO_ctrl_pending(bio); }

/// The oldest protocol version a context accepts.
static inline int copenssl_ctx_set_min_proto_version(SSL_CTX *context, int version) {
    return (int)SSL_CTX_set_min_proto_version(context, version);
}

/// The newest protocol version a context accepts (0: the newest OpenSSL has).
static inline int copenssl_ctx_set_max_proto_version(SSL_CTX *context, int version) {
    return (int)SSL_CTX_set_max_proto_version(context, version);
}

/// Refuses renegotiation (TLS 1.2): a client asking for one handshake after another would make the
/// server spend a handshake's work each time.
static inline void copenssl_ctx_refuse_renegotiation(SSL_CTX *context) {
    SSL_CTX_set_options(context, SSL_OP_NO_RENEGOTIATION);
}

/// A session's peer name for SNI, on a client (tests connect through it).
static inline long copenssl_set_tlsext_host_name(SSL *session, const char *name) {
    return SSL_set_tlsext_host_name(session, name);
}

#endif
