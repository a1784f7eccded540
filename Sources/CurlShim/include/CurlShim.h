// Calls into libcurl's variadic functions through pointers found with dlsym, so the C compiler
// passes the variadic argument by each platform's own rules (on Apple arm64 such arguments go on
// the stack, unlike named ones). push-outbox needs no curl headers: only these shapes, and one
// reader of the `CURLMsg` struct that `curl_multi_info_read` returns.
#ifndef PUSH_OUTBOX_CURL_SHIM_H
#define PUSH_OUTBOX_CURL_SHIM_H

/// curl_easy_setopt(handle, option, pointer) through `function`.
int po_curl_setopt_pointer(void *function, void *handle, int option, const void *value);

/// curl_easy_setopt(handle, option, long) through `function`.
int po_curl_setopt_long(void *function, void *handle, int option, long value);

/// curl_easy_getinfo(handle, info, pointer) through `function`.
int po_curl_getinfo(void *function, void *handle, int info, void *out);

/// The fields of a `CURLMsg` (curl.h: `{CURLMSG msg; CURL *easy_handle; union {void *whatever;
/// CURLcode result;} data;}`): returns `msg` (1: CURLMSG_DONE), sets the handle and the result.
int po_curl_msg_read(const void *message, void **easy, int *result);

#endif
