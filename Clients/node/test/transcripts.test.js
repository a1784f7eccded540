// Replays every Protocol/transcripts/*.txt against the real binary, byte for byte.
//
// Format (Protocol/README.md, "Transcript format"; a malformed line is an error): "> " + raw line
// sent verbatim (a bare ">" sends an empty line); "< " + expected reply (compared as parsed JSON);
// "#" comment; "#! args: --foo bar" extra command-line args; "#! framing: content-length" sends each
// ">" text as one LSP message (Content-Length header, no newline) and reads the replies the same way;
// blank lines (spaces and tabs) ignored.
// The server runs with --memory --fixed-clock 2026-01-01T00:00:00.000Z --id-seed 1 plus
// those args; every ">" line is written, stdin is closed, and the list of parsed stdout
// lines must equal the list of "<" lines, in order.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { TEST_ARGS, realBinary, transcriptsDir } from './helpers.js';

const NEWLINE = 0x0a;
const RUN_TIMEOUT_MS = 30_000;

function splitLines(buffer) {
  const lines = [];
  let start = 0;
  let newline;
  while ((newline = buffer.indexOf(NEWLINE, start)) !== -1) {
    lines.push(buffer.subarray(start, newline));
    start = newline + 1;
  }
  if (start < buffer.length) lines.push(buffer.subarray(start));
  return lines;
}

/** The bodies of a stream of `Content-Length: N\r\n\r\n` messages. */
function headerBodies(buffer) {
  const bodies = [];
  let start = 0;
  while (start < buffer.length) {
    const end = buffer.indexOf('\r\n\r\n', start);
    const match = /^Content-Length: (\d+)$/.exec(buffer.subarray(start, end).toString('latin1'));
    if (end === -1 || !match) throw new Error(`not a Content-Length header at byte ${start}`);
    const length = Number(match[1]);
    if (end + 4 + length > buffer.length) throw new Error(`a body is cut short at byte ${start}`);
    bodies.push(buffer.subarray(end + 4, end + 4 + length));
    start = end + 4 + length;
  }
  return bodies;
}

/** @returns {{send: Buffer[], expect: unknown[], args: string[], framing: string}} */
export function parseTranscript(buffer, name = 'transcript') {
  const send = [];
  const expect = [];
  const args = [];
  let framing = 'newline';
  splitLines(buffer).forEach((line, index) => {
    const where = `${name}:${index + 1}`;
    const text = line.toString('utf8');
    if (/^[ \t]*$/.test(text)) return;
    if (text.startsWith('#!')) {
      const framed = /^#!\s*framing\s*:\s*(newline|content-length)\s*$/.exec(text);
      const match = /^#!\s*args\s*:(.*)$/s.exec(text);
      if (framed) framing = framed[1];
      else if (!match) {
        throw new Error(`${where}: unknown directive ${JSON.stringify(text.slice(0, 60))} (only '#! args:', '#! framing:')`);
      } else args.push(...match[1].split(/[ \t]+/).filter(Boolean));
    } else if (text.startsWith('#')) {
      // comment
    } else if (text === '>' || text.startsWith('> ')) {
      send.push(line.subarray(2)); // raw bytes, verbatim
    } else if (text.startsWith('< ')) {
      try {
        expect.push(JSON.parse(text.slice(2)));
      } catch (err) {
        throw new Error(`${where}: expected reply is not JSON: ${err.message}`);
      }
    } else {
      throw new Error(`${where}: a line must be blank or start with '> ', '< ', '#': ${JSON.stringify(text.slice(0, 80))}`);
    }
  });
  return { send, expect, args, framing };
}

function run(binary, args, input) {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const stdout = [];
    const stderr = [];
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not exit within ${RUN_TIMEOUT_MS} ms after stdin was closed`));
    }, RUN_TIMEOUT_MS);
    child.on('error', reject);
    child.stdin.on('error', () => {}); // the server may stop reading early; its output still counts
    child.stdout.on('data', (chunk) => stdout.push(chunk));
    child.stderr.on('data', (chunk) => stderr.push(chunk));
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr).toString('utf8') });
    });
    child.stdin.end(input);
  });
}

const files = fs.existsSync(transcriptsDir)
  ? fs.readdirSync(transcriptsDir).filter((f) => f.endsWith('.txt')).sort()
  : [];

describe('the transcript format (Protocol/tests/transcript-format.json)', () => {
  const cases = JSON.parse(fs.readFileSync(path.join(transcriptsDir, '..', 'tests', 'transcript-format.json'), 'utf8'));
  for (const line of cases.malformed) {
    test(`malformed: ${JSON.stringify(line)}`, () => {
      assert.throws(() => parseTranscript(Buffer.from(`> {}\n${line}\n`), 'bad.txt'));
    });
  }
  test('a well-formed transcript', () => {
    const { send, expect, args } = parseTranscript(Buffer.from(cases.good.text), 'good.txt');
    assert.deepEqual(args, cases.good.args);
    assert.deepEqual(send.map((b) => b.toString('utf8')), cases.good.sends);
    assert.deepEqual(expect, cases.good.expected);
  });
});

describe('Protocol/transcripts', () => {
  test('at least one transcript exists', () => {
    assert.ok(files.length > 0, `no *.txt transcripts in ${transcriptsDir}`);
  });

  for (const file of files) {
    test(file, async () => {
      const { send, expect, args, framing } = parseTranscript(fs.readFileSync(path.join(transcriptsDir, file)), file);
      const headers = framing === 'content-length';
      const input = Buffer.concat(
        send.flatMap((line) => (headers ? [Buffer.from(`Content-Length: ${line.length}\r\n\r\n`), line] : [line, Buffer.from('\n')])),
      );
      const result = await run(realBinary(), [...TEST_ARGS, ...args], input);
      const context = `\n${file}: exit ${result.code ?? result.signal}; stderr:\n${result.stderr}`;
      const lines = headers ? headerBodies(result.stdout) : splitLines(result.stdout);
      assert.ok(
        headers || result.stdout.length === 0 || result.stdout[result.stdout.length - 1] === NEWLINE,
        `stdout does not end with a newline${context}`,
      );
      const replies = lines.map((line, i) => {
        try {
          return JSON.parse(line.toString('utf8'));
        } catch (err) {
          assert.fail(`stdout line ${i + 1} is not JSON (${err.message}): ${line.toString('utf8').slice(0, 200)}${context}`);
        }
      });
      assert.deepStrictEqual(replies, expect, `replies differ from the "<" lines${context}`);
    });
  }
});
