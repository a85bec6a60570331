#include <libwebsockets.h>
#include <netinet/tcp.h>

/* Swift cannot import function-like or computed macros; re-export the ones the
 * relay needs as constants. */

/* Bytes lws needs in front of every buffer passed to lws_write (LWS_PRE). */
static const int chat_lws_pre = LWS_PRE;

/* TCP_CORK, for the relay's bursts of socket frames (see ServiceCore.writeSocket). */
static const int chat_tcp_cork = TCP_CORK;

/* Server options used by the relay (64-bit shifted macros). */
static const unsigned long long chat_lws_option_validate_utf8 = LWS_SERVER_OPTION_VALIDATE_UTF8;
static const unsigned long long chat_lws_option_disable_ipv6 = LWS_SERVER_OPTION_DISABLE_IPV6;
/* OpenSSL set up by the context: TLS for the relay's vhost and the client's connections. */
static const unsigned long long chat_lws_option_ssl_global_init = LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;

/* OpenSSL's options that refuse every protocol below TLS 1.2 (SSL_OP_* are computed
 * macros); libwebsockets.h includes <openssl/ssl.h> on Debian's OpenSSL build. */
static const long chat_ssl_op_below_tls_1_2 = (long)(SSL_OP_NO_SSLv3 | SSL_OP_NO_TLSv1 | SSL_OP_NO_TLSv1_1);

/* Why a certificate chain and a private key cannot serve TLS together (OpenSSL's reason
 * in `reason`), or 0 when they can: the relay says so in one line rather than through
 * libwebsockets' log. */
static inline int chat_tls_pair_problem(const char *certificate, const char *key, char *reason, size_t size) {
  SSL_CTX *context = SSL_CTX_new(TLS_server_method());
  int failed = context == NULL
    || SSL_CTX_use_certificate_chain_file(context, certificate) != 1
    || SSL_CTX_use_PrivateKey_file(context, key, SSL_FILETYPE_PEM) != 1
    || SSL_CTX_check_private_key(context) != 1;
  if (failed) ERR_error_string_n(ERR_get_error(), reason, size);
  ERR_clear_error();
  SSL_CTX_free(context);
  return failed;
}

/* An idle TLS connection gives its read and write buffers back (about 34 KiB each
 * connection otherwise): SSL_CTX_set_mode is a macro over SSL_CTX_ctrl. */
static inline void chat_ssl_ctx_release_buffers(void *context) {
  SSL_CTX_set_mode((SSL_CTX *)context, SSL_MODE_RELEASE_BUFFERS);
}

/* lws_set_timeout's "close this connection at the next service" value. */
static const int chat_lws_to_kill_async = LWS_TO_KILL_ASYNC;

/* "No Content-Length header" marker for lws_add_http_common_headers. */
static const lws_filepos_t chat_lws_illegal_http_content_len = LWS_ILLEGAL_HTTP_CONTENT_LEN;

/* Names the calling thread (15 bytes at most), as ps and perf show it: Foundation on
 * Linux leaves a new Thread with its creator's name. glibc declares
 * pthread_setname_np only under _GNU_SOURCE, hence the declaration here. */
extern int pthread_setname_np(pthread_t thread, const char *name);
static inline void chat_name_this_thread(const char *name) { pthread_setname_np(pthread_self(), name); }

/* A connection lws cannot parse as HTTP (an unknown method, a first line that is not
 * HTTP, plain HTTP to the TLS port) falls back to the raw-socket role on the relay's
 * protocol, which answers it with a JSON 400 instead of lws's HTML 403 over HTTP/1.0. */
static const unsigned long long chat_lws_option_fallback_to_raw = LWS_SERVER_OPTION_FALLBACK_TO_APPLY_LISTEN_ACCEPT_CONFIG;
/* With TLS: lws peeks at a new connection's first bytes, so that plain HTTP there takes
 * that fallback too (without it lws hangs up); never served as HTTP (no
 * ALLOW_HTTP_ON_HTTPS_LISTENER). */
static const unsigned long long chat_lws_option_peek_for_plaintext = LWS_SERVER_OPTION_ALLOW_NON_SSL_ON_SSL_PORT;
