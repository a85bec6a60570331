#ifndef CHAT_THUMBNAIL_H
#define CHAT_THUMBNAIL_H

#include <stddef.h>

/* Thumbnails with libvips, loaded with dlopen on first use (see thumbnail.c). */

/* What chat_thumbnail made: a JPEG of the image shrunk to fit a box, and the
 * image's own size in pixels. `jpeg` is freed with chat_thumbnail_free. */
typedef struct {
  unsigned char *jpeg;
  size_t length;
  int width;
  int height;
} chat_thumbnail_result;

/* Makes a JPEG thumbnail of the image at `path`, at most `box` pixels a side and at
 * most `max_bytes` long (the quality steps down, then the box, until it fits).
 * Returns 0 on success; else -1 with a one-line reason in `error` (libvips missing,
 * not an image libvips reads, ...). */
int chat_thumbnail(const char *path, int box, size_t max_bytes, chat_thumbnail_result *result, char *error,
                   size_t error_size);

/* Frees a result's bytes. */
void chat_thumbnail_free(chat_thumbnail_result *result);

#endif
