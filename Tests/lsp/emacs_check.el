;;; emacs_check.el --- Emacs with eglot over push-outbox lsp, in batch  -*- lexical-binding: t -*-
;; Opens $PAYLOAD with Clients/editors/emacs/push-outbox-eglot.el, waits for the Flymake
;; diagnostics eglot gets, asks for a hover and the quick fixes, prints one line each on stdout.
;; Run by Tests/lsp/test_editors_lsp.py.

(require 'package)
(package-initialize)  ; Debian's elpa-eglot on Emacs 28
(load (expand-file-name "Clients/editors/emacs/push-outbox-eglot.el" (getenv "REPO")))
(remove-hook 'push-outbox-payload-mode-hook #'eglot-ensure)  ; started by hand below, in batch

(defun check-out (fmt &rest args)
  (princ (concat (apply #'format fmt args) "\n")))

(find-file (getenv "PAYLOAD"))
(apply #'eglot (eglot--guess-contact))
(let ((deadline (+ (float-time) 20)) (found nil))
  (while (and (not found) (< (float-time) deadline))
    (flymake-start)
    (accept-process-output nil 0.1)
    (setq found (flymake-diagnostics)))
  (unless found (check-out "no diagnostics") (kill-emacs 1))
  (dolist (d (sort found (lambda (a b) (< (flymake-diagnostic-beg a) (flymake-diagnostic-beg b)))))
    (check-out "diagnostic %d %s %s" (line-number-at-pos (flymake-diagnostic-beg d))
               (flymake-diagnostic-type d) (flymake-diagnostic-text d))))
(let* ((server (eglot-current-server))
       (doc (list :uri (eglot--path-to-uri (buffer-file-name))))
       (hover (jsonrpc-request server :textDocument/hover
                               (list :textDocument doc :position (list :line 4 :character 6))))
       (actions (jsonrpc-request server :textDocument/codeAction
                                 (list :textDocument doc
                                       :range (list :start (list :line 0 :character 0)
                                                    :end (list :line 9 :character 0))
                                       :context (list :diagnostics [])))))
  (check-out "hover %s" (car (split-string (plist-get (plist-get hover :contents) :value) "\n")))
  (check-out "actions %s" (mapconcat (lambda (a) (plist-get a :title)) actions " | "))
  (eglot-shutdown server))
(kill-emacs 0)
