// A Node equivalent of push-outbox's hot path, for benchmarks only (same rules as baseline_server.py).
import { randomUUID } from "node:crypto";

const store = [];
let seq = 0;
let rest = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  const lines = (rest + chunk).split("\n");
  rest = lines.pop();
  let out = "";
  for (const line of lines) {
    if (!line.trim()) continue;
    let req;
    try { req = JSON.parse(line); } catch {
      out += '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}\n';
      continue;
    }
    const params = req.params || {};
    const name = params.name;
    const props = params.properties ?? {};
    if (typeof name !== "string" || name.length === 0 || name.length > 255 || name.startsWith("$") ||
        typeof props !== "object" || Array.isArray(props) || Object.keys(props).length > 256) {
      out += JSON.stringify({ jsonrpc: "2.0", id: req.id ?? null, error: { code: -32602, message: "Invalid params" } }) + "\n";
      continue;
    }
    seq += 1;
    const id = randomUUID();
    store.push({ id, seq, savedAt: Date.now(), name, properties: props });
    out += JSON.stringify({ jsonrpc: "2.0", id: req.id, result: { id, seq, pending: store.length } }) + "\n";
  }
  if (out) process.stdout.write(out);
});
