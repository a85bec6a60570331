// libcrypto (OpenSSL 3, Debian's libssl-dev): random bytes for relay tokens, SHA-256
// of a token or of a file streamed in pieces (EVP), and a constant-time compare of two digests.
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
