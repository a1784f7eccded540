-- push-outbox from Neovim: `vim.fn.jobstart` with line callbacks, newline-delimited JSON-RPC.
--
-- Saves an event, flushes it and shows the result. push-outbox detects newline framing from the
-- first byte (`{`) and answers one JSON object per line, so Neovim's line-based job callbacks
-- suffice (`vim.lsp.rpc` would speak Content-Length, which push-outbox also understands).
--
-- Run:   PUSH_OUTBOX_BIN=/path/to/push-outbox nvim --headless -u NONE -c 'luafile push-outbox-demo.lua'
-- (without PUSH_OUTBOX_BIN, `push-outbox` is looked up on PATH). It prints three lines on stdout and
-- quits with push-outbox's own exit code: 0, as it ends with `shutdown` then `exit`.

local binary = os.getenv('PUSH_OUTBOX_BIN') or 'push-outbox'
local replies = {} -- replies by id
local partial = '' -- the start of a line whose end has not arrived yet
local exit_code = nil

local function out(text) io.stdout:write(text .. '\n') end

-- on_stdout gets the bytes read split at '\n': the first item continues the previous call's last
-- item, and the last item is the start of a line not yet ended ('' when the read ended a line).
local function on_stdout(_, data)
  data[1] = partial .. data[1]
  partial = table.remove(data)
  for _, line in ipairs(data) do
    if line ~= '' then
      local reply = vim.fn.json_decode(line)
      replies[reply.id] = reply
    end
  end
end

local job = vim.fn.jobstart({ binary, '--memory' }, {
  on_stdout = on_stdout,
  on_stderr = function() end, -- push-outbox's log lines; not protocol
  on_exit = function(_, code) exit_code = code end,
})
assert(job > 0, 'cannot start ' .. binary)

local next_id = 0
-- Sends one request and waits (up to 10 s) for its reply; returns the result or raises the error.
local function request(method, params)
  next_id = next_id + 1
  local id = next_id
  local message = { jsonrpc = '2.0', id = id, method = method, params = params or vim.empty_dict() }
  vim.fn.chansend(job, vim.fn.json_encode(message) .. '\n')
  assert(vim.wait(10000, function() return replies[id] ~= nil end), method .. ': no reply')
  local reply = replies[id]
  if reply.error then error(method .. ': ' .. vim.fn.json_encode(reply.error)) end
  return reply.result
end

local saved = request('saveCustomEvent', { name = 'push_opened', properties = { step = 1 }, user = { externalId = 'u1' } })
out(string.format('saved %s (pending %d)', saved.id, saved.pending))

-- A flush hands out every pending item and removes it (see `leaseMs` for two-step flushes).
local flushed = request('flushPending', { max = 100 })
local names = {}
for _, item in ipairs(flushed.items) do table.insert(names, item.name) end
out(string.format('flushed %d item(s): %s', #flushed.items, table.concat(names, ', ')))

-- The LSP lifecycle: `shutdown` answers null after a snapshot; the `exit` notification ends the process.
request('shutdown')
vim.fn.chansend(job, vim.fn.json_encode({ jsonrpc = '2.0', method = 'exit' }) .. '\n')
assert(vim.wait(10000, function() return exit_code ~= nil end), 'push-outbox did not exit')
out(string.format('push-outbox exited with %d', exit_code))
vim.cmd('cquit ' .. exit_code)
