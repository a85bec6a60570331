/* The transport's own limit for the relay bench: a bare libwebsockets WebSocket echo
 * server, one service thread like chat-relay, the same rx buffer size (64 KiB) and the
 * same ping policy. Every text frame received is sent back unchanged. No HTTP API, no
 * JSON, no database: what is left is libwebsockets and the kernel's loopback.
 *
 *   lws_echo [--port N] [--rx-buffer BYTES]
 *
 * Prints "listening on http://127.0.0.1:PORT" on stderr once ready (--port 0, the
 * default, picks a free port); SIGINT or SIGTERM stops it.
 * Build: cc -O2 -o lws_echo lws_echo.c $(pkg-config --cflags --libs libwebsockets)
 */
#include <libwebsockets.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One frame waiting to be echoed. */
struct pending {
  struct pending *next;
  size_t len;
  unsigned char buf[]; /* LWS_PRE + len */
};

struct session {
  struct pending *head, *tail;
  unsigned char *partial; /* a message arriving in several fragments */
  size_t partial_len;
};

static volatile sig_atomic_t stopping;
static struct lws_context *context;

static void on_signal(int sig) {
  (void)sig;
  stopping = 1;
  if (context) lws_cancel_service(context);
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
  struct session *s = user;
  switch (reason) {
  case LWS_CALLBACK_ESTABLISHED:
    memset(s, 0, sizeof *s);
    break;
  case LWS_CALLBACK_RECEIVE: {
    /* Gather fragments (rare: the clients send small frames) into one message. */
    unsigned char *p = realloc(s->partial, s->partial_len + len);
    if (!p) return -1;
    memcpy(p + s->partial_len, in, len);
    s->partial = p;
    s->partial_len += len;
    if (!lws_is_final_fragment(wsi) || lws_remaining_packet_payload(wsi)) break;
    struct pending *m = malloc(sizeof *m + LWS_PRE + s->partial_len);
    if (!m) return -1;
    m->next = NULL;
    m->len = s->partial_len;
    memcpy(m->buf + LWS_PRE, s->partial, s->partial_len);
    free(s->partial);
    s->partial = NULL;
    s->partial_len = 0;
    if (s->tail) s->tail->next = m; else s->head = m;
    s->tail = m;
    lws_callback_on_writable(wsi);
    break;
  }
  case LWS_CALLBACK_SERVER_WRITEABLE: {
    struct pending *m = s->head;
    if (!m) break;
    if (lws_write(wsi, m->buf + LWS_PRE, m->len, LWS_WRITE_TEXT) < (int)m->len) return -1;
    s->head = m->next;
    if (!s->head) s->tail = NULL;
    free(m);
    if (s->head) lws_callback_on_writable(wsi);
    break;
  }
  case LWS_CALLBACK_CLOSED:
    while (s->head) {
      struct pending *m = s->head;
      s->head = m->next;
      free(m);
    }
    free(s->partial);
    s->partial = NULL;
    break;
  default:
    break;
  }
  return 0;
}

int main(int argc, char **argv) {
  int port = 0;
  size_t rx = 64 * 1024;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--port") && i + 1 < argc) port = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--rx-buffer") && i + 1 < argc) rx = (size_t)atol(argv[++i]);
    else {
      fprintf(stderr, "usage: lws_echo [--port N] [--rx-buffer BYTES]\n");
      return 64;
    }
  }
  lws_set_log_level(LLL_ERR, NULL);

  struct lws_protocols protocols[] = {
    {"echo", callback, sizeof(struct session), rx, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0}, /* terminator */
  };
  /* As chat-relay: ping a socket idle for 30 s, hang up one silent for 60 s. */
  static const lws_retry_bo_t ping = {.secs_since_valid_ping = 30, .secs_since_valid_hangup = 60};
  struct lws_context_creation_info info;
  memset(&info, 0, sizeof info);
  info.port = port;
  info.iface = "127.0.0.1";
  info.protocols = protocols;
  info.gid = -1;
  info.uid = -1;
  info.retry_and_idle_policy = &ping;
  info.options = LWS_SERVER_OPTION_VALIDATE_UTF8 | LWS_SERVER_OPTION_DISABLE_IPV6;

  context = lws_create_context(&info);
  if (!context) {
    fprintf(stderr, "lws_echo: could not create the context\n");
    return 1;
  }
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  struct lws_vhost *vhost = lws_get_vhost_by_name(context, "default");
  fprintf(stderr, "listening on http://127.0.0.1:%d\n", vhost ? lws_get_vhost_listen_port(vhost) : -1);
  while (!stopping && lws_service(context, 0) >= 0) {
  }
  lws_context_destroy(context);
  return 0;
}
