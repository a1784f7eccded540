;;; push-outbox-eglot.el --- push-outbox lsp in Emacs through eglot  -*- lexical-binding: t -*-

;; Diagnostics (Flymake), hover (ElDoc), completion (completion-at-point) and quick fixes
;; (eglot-code-actions) for push payloads, from `push-outbox lsp'.
;;
;; Eglot ships with Emacs 29; on Emacs 28 install it (Debian: apt install elpa-eglot; or
;; M-x package-install RET eglot). Then, in your init file:
;;
;;   (load "/path/to/push-outbox-eglot.el")
;;
;; `.apns' files open in `push-outbox-payload-mode' (JSON editing from js-mode) with the server.
;; For JSON fixtures, also give your JSON mode to the server; it claims only JSON with a top-level
;; "aps" or "Simulator Target Bundle":
;;
;;   (add-to-list 'eglot-server-programs
;;                `((json-mode js-json-mode) . ,(push-outbox-eglot-command)))
;;
;; $PUSH_OUTBOX_BIN names the binary; otherwise `push-outbox' is looked up on PATH.

;;; Code:

(require 'eglot)
(require 'js)

(defun push-outbox-eglot-command ()
  "The command line that starts the payload language server."
  (list (or (getenv "PUSH_OUTBOX_BIN") "push-outbox") "lsp"))

(define-derived-mode push-outbox-payload-mode js-mode "Payload"
  "Major mode for APNs payload files (.apns): JSON checked by `push-outbox lsp'.")

(add-to-list 'auto-mode-alist '("\\.apns\\'" . push-outbox-payload-mode))
(add-to-list 'eglot-server-programs
             `(push-outbox-payload-mode . ,(push-outbox-eglot-command)))
(add-hook 'push-outbox-payload-mode-hook #'eglot-ensure)

(provide 'push-outbox-eglot)
;;; push-outbox-eglot.el ends here
