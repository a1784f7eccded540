;;; push-outbox-demo.el --- push-outbox from Emacs with the built-in jsonrpc.el  -*- lexical-binding: t -*-

;; Saves an event, flushes it and shows the result, talking to push-outbox as an Emacs package would:
;; through `jsonrpc-process-connection', which speaks the LSP base protocol (Content-Length headers).
;; push-outbox detects that framing from the first bytes and answers in it; no flag is needed.
;;
;; Run:   PUSH_OUTBOX_BIN=/path/to/push-outbox emacs --batch -l push-outbox-demo.el -f push-outbox-demo
;; (without PUSH_OUTBOX_BIN, `push-outbox' is looked up on PATH). It prints three lines and exits
;; with push-outbox's own exit code: 0, as it ends with `shutdown' then `exit'.

;;; Code:

(require 'jsonrpc)

(defvar push-outbox-arguments '("--memory")
  "Arguments for push-outbox. A real integration would use `--store DIR' to keep events across runs.")

(defun push-outbox-connect ()
  "Start push-outbox and return a jsonrpc connection to it."
  (let ((process (make-process
                  :name "push-outbox"
                  :command (cons (or (getenv "PUSH_OUTBOX_BIN") "push-outbox") push-outbox-arguments)
                  :connection-type 'pipe
                  :coding 'utf-8-emacs-unix
                  :noquery t
                  ;; stderr carries push-outbox's log lines only; keep them out of the protocol.
                  :stderr (get-buffer-create " *push-outbox stderr*"))))
    (make-instance 'jsonrpc-process-connection :name "push-outbox" :process process)))

(defun push-outbox-demo ()
  "Save one event, flush it, print what came back, then shut push-outbox down."
  (let* ((connection (push-outbox-connect))
         (process (jsonrpc--process connection)))
    ;; `jsonrpc-request' waits for the reply and returns its `result' as a plist
    ;; (or signals `jsonrpc-error' with the server's code, message and data).
    (let ((saved (jsonrpc-request connection :saveCustomEvent
                                  '(:name "push_opened" :properties (:step 1)
                                    :user (:externalId "u1")))))
      (princ (format "saved %s (pending %d)\n" (plist-get saved :id) (plist-get saved :pending))))
    ;; A flush hands out every pending item and removes it (see `leaseMs' for two-step flushes).
    (let* ((flushed (jsonrpc-request connection :flushPending '(:max 100)))
           (items (plist-get flushed :items)))
      (princ (format "flushed %d item(s): %s\n" (length items)
                     (mapconcat (lambda (item) (plist-get item :name)) items ", "))))
    ;; The LSP lifecycle: `shutdown' answers null after a snapshot, `exit' ends the process.
    (jsonrpc-request connection :shutdown nil)
    (jsonrpc-notify connection :exit nil)
    (while (process-live-p process) (accept-process-output process 0.05))
    (princ (format "push-outbox exited with %d\n" (process-exit-status process)))
    (kill-emacs (process-exit-status process))))

(provide 'push-outbox-demo)
;;; push-outbox-demo.el ends here
