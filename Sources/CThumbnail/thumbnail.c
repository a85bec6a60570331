// Thumbnails through libvips (Debian's libvips42: shrink-on-load, constant memory),
// loaded with dlopen the first time one is made. Linking libvips into chat-sync would
// load its 103 shared libraries at every start: 32 ms a process on this machine
// (docs/decisions/0019), for every `send` and every `run`, most of which never make a
// thumbnail. libvips' API is variadic, which Swift cannot call, hence C.
// See https://www.libvips.org/API/current/libvips-resample.html#vips-thumbnail
#include "CThumbnail.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void VipsImage;
/* VipsSize's VIPS_SIZE_DOWN (vips/resample.h): only ever shrink. */
enum { chat_vips_size_down = 2 };

static struct {
  int (*init)(const char *);
  int (*thumbnail)(const char *, VipsImage **, int, ...);
  VipsImage *(*new_from_file)(const char *, ...);
  int (*jpegsave_buffer)(VipsImage *, void **, size_t *, ...);
  int (*get_width)(const VipsImage *);
  int (*get_height)(const VipsImage *);
  void (*unref)(void *);
  void (*g_free)(void *);
  const char *(*error_buffer)(void);
  void (*error_clear)(void);
  const char *failure;
} vips;

static pthread_once_t loaded = PTHREAD_ONCE_INIT;

static void load(void) {
  void *library = dlopen("libvips.so.42", RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) {
    vips.failure = "libvips is not installed (Debian: apt install libvips42)";
    return;
  }
  *(void **)&vips.init = dlsym(library, "vips_init");
  *(void **)&vips.thumbnail = dlsym(library, "vips_thumbnail");
  *(void **)&vips.new_from_file = dlsym(library, "vips_image_new_from_file");
  *(void **)&vips.jpegsave_buffer = dlsym(library, "vips_jpegsave_buffer");
  *(void **)&vips.get_width = dlsym(library, "vips_image_get_width");
  *(void **)&vips.get_height = dlsym(library, "vips_image_get_height");
  *(void **)&vips.unref = dlsym(library, "g_object_unref");
  *(void **)&vips.g_free = dlsym(library, "g_free");
  *(void **)&vips.error_buffer = dlsym(library, "vips_error_buffer");
  *(void **)&vips.error_clear = dlsym(library, "vips_error_clear");
  if (!vips.init || !vips.thumbnail || !vips.new_from_file || !vips.jpegsave_buffer || !vips.get_width ||
      !vips.get_height || !vips.unref || !vips.g_free || !vips.error_buffer || !vips.error_clear) {
    vips.failure = "libvips.so.42 lacks a function chat-sync needs";
    return;
  }
  if (vips.init("chat") != 0) vips.failure = "libvips did not start";
}

/* The first line of libvips' error buffer (cleared), or `fallback`. */
static void reason(char *error, size_t size, const char *fallback) {
  const char *text = vips.error_buffer ? vips.error_buffer() : NULL;
  if (text == NULL || *text == 0) text = fallback;
  size_t length = strcspn(text, "\n");
  snprintf(error, size, "%.*s", (int)length, text);
  if (vips.error_clear) vips.error_clear();
}

int chat_thumbnail(const char *path, int box, size_t max_bytes, chat_thumbnail_result *result, char *error,
                   size_t error_size) {
  pthread_once(&loaded, load);
  memset(result, 0, sizeof *result);
  if (vips.failure) {
    snprintf(error, error_size, "%s", vips.failure);
    return -1;
  }
  // The header only: width and height without decoding the pixels.
  VipsImage *original = vips.new_from_file(path, NULL);
  if (original == NULL) {
    reason(error, error_size, "not an image libvips reads");
    return -1;
  }
  result->width = vips.get_width(original);
  result->height = vips.get_height(original);
  vips.unref(original);
  static const int qualities[] = {75, 60, 45, 30};
  for (int side = box; side >= 32; side = side * 3 / 4) {
    VipsImage *small = NULL;
    if (vips.thumbnail(path, &small, side, "height", side, "size", chat_vips_size_down, NULL) != 0) {
      reason(error, error_size, "cannot shrink the image");
      return -1;
    }
    for (size_t q = 0; q < sizeof qualities / sizeof qualities[0]; q++) {
      void *bytes = NULL;
      size_t length = 0;
      if (vips.jpegsave_buffer(small, &bytes, &length, "Q", qualities[q], "strip", 1, NULL) != 0) {
        vips.unref(small);
        reason(error, error_size, "cannot write the thumbnail as JPEG");
        return -1;
      }
      if (length <= max_bytes) {
        vips.unref(small);
        result->jpeg = malloc(length);
        if (result->jpeg == NULL) {
          vips.g_free(bytes);
          snprintf(error, error_size, "out of memory");
          return -1;
        }
        memcpy(result->jpeg, bytes, length);
        result->length = length;
        vips.g_free(bytes);
        return 0;
      }
      vips.g_free(bytes);
    }
    vips.unref(small);
  }
  snprintf(error, error_size, "no thumbnail of this image fits in %zu bytes", max_bytes);
  return -1;
}

void chat_thumbnail_free(chat_thumbnail_result *result) {
  free(result->jpeg);
  result->jpeg = NULL;
  result->length = 0;
}
