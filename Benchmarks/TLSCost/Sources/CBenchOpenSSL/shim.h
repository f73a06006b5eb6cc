#ifndef CBENCHOPENSSL_SHIM_H
#define CBENCHOPENSSL_SHIM_H

// OpenSSL's headers, as the benchmark's client and its OpenSSL server use them. No additions:
// the benchmark calls the functions behind OpenSSL's macros itself (BIO_ctrl, SSL_CTX_ctrl).
#include <openssl/err.h>
#include <openssl/ssl.h>

#endif
