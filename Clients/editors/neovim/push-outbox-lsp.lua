-- push-outbox lsp in Neovim: diagnostics, hover, completion and quick fixes for push payloads.
--
-- Put this file on your runtimepath (e.g. ~/.config/nvim/lua/push-outbox-lsp.lua) and call
--   require('push-outbox-lsp').setup()
-- or `luafile` it and call `PushOutboxLSP.setup()`. It starts `push-outbox lsp` for `*.apns` files
-- (read as JSON) and for JSON buffers; the server claims only JSON that looks like a payload (a
-- top-level "aps" or "Simulator Target Bundle"), so other JSON files stay untouched.
--
-- Options: setup({ cmd = { '/path/to/push-outbox', 'lsp' }, globs = { '*.payload.json' } }).
-- $PUSH_OUTBOX_BIN overrides the binary. Uses vim.lsp.start (Neovim 0.8+), or start_client and
-- buf_attach_client on Neovim 0.7.

local M = {}

local function config(opts)
  local binary = os.getenv('PUSH_OUTBOX_BIN') or 'push-outbox'
  return {
    name = 'push-outbox',
    cmd = opts.cmd or { binary, 'lsp' },
    root_dir = vim.fn.getcwd(),
    init_options = { globs = opts.globs or {} },
  }
end

local clients = {}

-- Starts (or reuses) the server and attaches it to buffer `bufnr`.
function M.attach(bufnr, opts)
  opts = opts or {}
  local cfg = config(opts)
  if vim.lsp.start then
    return vim.lsp.start(cfg, { bufnr = bufnr })
  end
  local root = cfg.root_dir
  if not clients[root] or vim.lsp.client_is_stopped(clients[root]) then
    clients[root] = vim.lsp.start_client(cfg)
  end
  vim.lsp.buf_attach_client(bufnr, clients[root])
  return clients[root]
end

function M.setup(opts)
  opts = opts or {}
  vim.cmd([[
    augroup push_outbox_lsp
      autocmd!
      autocmd BufRead,BufNewFile *.apns setlocal filetype=json
    augroup END
  ]])
  _G.PushOutboxLSP._opts = opts
  vim.cmd([[autocmd push_outbox_lsp FileType json lua PushOutboxLSP.attach(tonumber(vim.fn.expand('<abuf>')), PushOutboxLSP._opts)]])
end

_G.PushOutboxLSP = M
return M
