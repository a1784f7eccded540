-- Headless Neovim over `push-outbox lsp` (Clients/editors/neovim/push-outbox-lsp.lua): opens the
-- file named by $PAYLOAD, waits for the diagnostics, asks for a hover, a completion and the quick
-- fixes, and prints what it got, one line each, on stdout. Run by Tests/lsp/test_editors_lsp.py.
local function out(text) io.stdout:write(text .. '\n') end

dofile(os.getenv('REPO') .. '/Clients/editors/neovim/push-outbox-lsp.lua')
PushOutboxLSP.setup()
vim.cmd('edit ' .. os.getenv('PAYLOAD'))
local bufnr = vim.api.nvim_get_current_buf()

local ok = vim.wait(10000, function() return #vim.diagnostic.get(bufnr) > 0 end, 20)
if not ok then
  out('no diagnostics')
  vim.cmd('cquit 1')
end
local found = vim.diagnostic.get(bufnr)
table.sort(found, function(a, b) return a.lnum < b.lnum or (a.lnum == b.lnum and a.col < b.col) end)
for _, d in ipairs(found) do
  local code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)
  out(string.format('diagnostic %d:%d-%d:%d %s', d.lnum, d.col, d.end_lnum, d.end_col, code))
end

local function at(line, col)
  return { textDocument = { uri = vim.uri_from_bufnr(bufnr) }, position = { line = line, character = col } }
end
local function first(results)
  for _, r in pairs(results or {}) do
    if r.result then return r.result end
  end
end

-- Line 4 is `    "badge": "3",`: the key starts at column 5.
local hover = first(vim.lsp.buf_request_sync(bufnr, 'textDocument/hover', at(4, 6), 5000))
out('hover ' .. (hover and hover.contents.value:match('^%*%*([%w-]+)%*%*') or 'none'))

local params = at(5, 27)
local completion = first(vim.lsp.buf_request_sync(bufnr, 'textDocument/completion', params, 5000)) or {}
local labels = {}
for _, item in ipairs(completion.items or completion) do table.insert(labels, item.label) end
out('completion ' .. table.concat(labels, ' '))

local range = { start = { line = 0, character = 0 }, ['end'] = { line = 9, character = 0 } }
local actions = first(vim.lsp.buf_request_sync(bufnr, 'textDocument/codeAction', {
  textDocument = { uri = vim.uri_from_bufnr(bufnr) }, range = range, context = { diagnostics = {} },
}, 5000)) or {}
local titles = {}
for _, action in ipairs(actions) do table.insert(titles, action.title) end
table.sort(titles)
out('actions ' .. table.concat(titles, ' | '))
vim.cmd('qa!')
