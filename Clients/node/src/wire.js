// The line format: encoding a request line, splitting stdout into lines, keeping a stderr tail.

import { ErrorCodes, ParseError } from './errors.js';

/** The server's default --max-line-bytes (16 MiB). */
export const DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024;
const NEWLINE = 0x0a;
// JSON.stringify escapes lone surrogates as \udXXX; paired ones are emitted raw.
// Such a line is rejected by the server with an unattributable -32700 (id null).
const LONE_SURROGATE_ESCAPE = /(?:^|[^\\])(?:\\\\)*\\u[dD][89a-fA-F][0-9a-fA-F]{2}/;

/**
 * The request (or, without `id`, notification) line for `method`, newline included.
 * @throws {TypeError | ParseError} when it cannot be sent (the call rejects with it)
 */
export function encodeRequest(method, params, id, maxLineBytes) {
  if (typeof method !== 'string') throw new TypeError('method must be a string');
  if (params !== undefined && (params === null || typeof params !== 'object')) {
    throw new TypeError(`${method}: params must be an object or an array`);
  }
  const message = id === undefined ? { jsonrpc: '2.0', method } : { jsonrpc: '2.0', id, method };
  if (params !== undefined) message.params = params;
  let line;
  try {
    line = JSON.stringify(message);
  } catch (err) {
    throw new TypeError(`${method}: params cannot be encoded as JSON: ${err.message}`, { cause: err });
  }
  if ((line.includes('\\ud') || line.includes('\\uD')) && LONE_SURROGATE_ESCAPE.test(line)) {
    throw new TypeError(`${method}: params contain a lone UTF-16 surrogate, which is not valid Unicode`);
  }
  if (maxLineBytes > 0 && line.length > maxLineBytes / 3) {
    const bytes = Buffer.byteLength(line, 'utf8');
    if (bytes > maxLineBytes) {
      const data = { reason: 'line_too_long', limit: maxLineBytes, length: bytes };
      throw new ParseError(ErrorCodes.ParseError, `Request line is ${bytes} bytes, over the limit`, data, method);
    }
  }
  return line + '\n';
}

/** Splits a byte stream into lines (without the newline) and hands each to `onLine`. */
export class LineSplitter {
  #parts = [];
  #onLine;

  constructor(onLine) {
    this.#onLine = onLine;
  }

  push(chunk) {
    let start = 0;
    let newline;
    while ((newline = chunk.indexOf(NEWLINE, start)) !== -1) {
      let line = chunk.subarray(start, newline);
      if (this.#parts.length > 0) {
        this.#parts.push(line);
        line = Buffer.concat(this.#parts);
        this.#parts = [];
      }
      this.#onLine(line);
      start = newline + 1;
    }
    if (start < chunk.length) this.#parts.push(chunk.subarray(start));
  }

  /** Hands over an unterminated last line, if any. */
  end() {
    if (this.#parts.length > 0) {
      const rest = Buffer.concat(this.#parts);
      this.#parts = [];
      this.#onLine(rest);
    }
  }
}

/** The last `limit` bytes of `tail` followed by `chunk`. */
export function appendTail(tail, chunk, limit) {
  if (chunk.length >= limit) return Buffer.from(chunk.subarray(chunk.length - limit));
  const joined = Buffer.concat([tail, chunk]);
  return joined.length > limit ? joined.subarray(joined.length - limit) : joined;
}

/**
 * Decodes one stdout line: null for a blank line, `{ line, error }` for one that is not UTF-8 or
 * not JSON, else `{ line, messages }` (a batch gives several messages).
 */
export function decodeLine(bytes, decoder) {
  let text;
  try {
    text = decoder.decode(bytes);
  } catch (err) {
    return { line: bytes.toString('latin1'), error: err };
  }
  if (text.trim() === '') return null;
  let message;
  try {
    message = JSON.parse(text);
  } catch (err) {
    return { line: text, error: err };
  }
  return { line: text, messages: Array.isArray(message) ? message : [message] };
}
