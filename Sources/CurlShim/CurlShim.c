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

struct po_curl_msg {
  int msg;
  void *easy_handle;
  union {
    void *whatever;
    int result;
  } data;
};

int po_curl_msg_read(const void *message, void **easy, int *result) {
  const struct po_curl_msg *m = (const struct po_curl_msg *)message;
  *easy = m->easy_handle;
  *result = m->data.result;
  return m->msg;
}
