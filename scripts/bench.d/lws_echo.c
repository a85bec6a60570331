/* A bare libwebsockets echo server: the transport's own limit beside chat-relay in
 * scripts/bench. Built with gcc against Debian's libwebsockets-dev; loopback only.
 * usage: lws_echo PORT   (prints "listening PORT" once ready; stops on SIGTERM)
 * Each client sends one text message and waits for its echo, so one slot a session is enough. */
#include <libwebsockets.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct session {
  unsigned char buffer[LWS_PRE + 4096];
  size_t length;
};

static volatile int stopping;

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
  struct session *s = (struct session *)user;
  switch (reason) {
  case LWS_CALLBACK_RECEIVE:
    if (len > 4096) return -1;
    memcpy(s->buffer + LWS_PRE, in, len);
    s->length = len;
    lws_callback_on_writable(wsi);
    break;
  case LWS_CALLBACK_SERVER_WRITEABLE:
    if (s->length) {
      if (lws_write(wsi, s->buffer + LWS_PRE, s->length, LWS_WRITE_TEXT) < (int)s->length) return -1;
      s->length = 0;
    }
    break;
  default:
    break;
  }
  return 0;
}

static const struct lws_protocols protocols[] = {
  {"echo", callback, sizeof(struct session), 4096, 0, NULL, 0},
  {NULL, NULL, 0, 0, 0, NULL, 0},
};

static void on_signal(int number) { (void)number; stopping = 1; }

int main(int argc, char **argv) {
  struct lws_context_creation_info info;
  memset(&info, 0, sizeof info);
  info.port = argc > 1 ? atoi(argv[1]) : 0;
  info.iface = "127.0.0.1";
  info.protocols = protocols;
  lws_set_log_level(LLL_ERR, NULL);
  struct lws_context *context = lws_create_context(&info);
  if (!context) return 1;
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  printf("listening %d\n", info.port);
  fflush(stdout);
  while (!stopping && lws_service(context, 100) >= 0) {}
  lws_context_destroy(context);
  return 0;
}
