#include "CurlShim.h"

typedef int (*po_variadic)(void *, int, ...);

int po_curl_setopt_pointer(void *function, void *handle, int option, const void *value) {
  return ((po_variadic)function)(handle, option, value);
}

int po_curl_setopt_long(void *function, void *handle, int option, long value) {
  return ((po_variadic)function)(handle, option, value);
}

int po_curl_getinfo(void *function, void *handle, int info, void *out) {
  return ((po_variadic)function)(handle, info, out);
}
