/**
 * docs/design.md invariant 1 on the embedded database (issue #30, point 1): a 201 means committed, and committed means
 * on disk, so an OS crash or power loss after the 201 loses nothing. A process crash cannot show it (the page cache
 * keeps an unsynced write), so this test watches the syscalls instead: the built service runs under `strace -f -yy`
 * (each descriptor shown with its path, each TCP socket with its addresses), tenants and jobs are registered over HTTP,
 * the jobs' callbacks reach a receiver on 127.0.0.1, and the trace must show
 * - for every acknowledgement (the 201 of a tenant, a job or a PUT by key; a batch's 200): an fdatasync or fsync of
 *   a pg_wal file completed between reading its request and writing its response;
 * - at every write that leaves the process (an API response, a callback request, which a claim's commit precedes),
 *   no WAL bytes written and not yet synced: every commit before it, a claim's and a finish's included, is on disk.
 * On PGlite's own settings (`-F`, and a file system whose fsync does nothing: electric-sql/pglite#1107), no WAL file
 * is ever synced; CHIME_EMBEDDED_SYNC=off keeps those, and the second test checks that the same rules catch it.
 *
 * Needs strace (Debian: `apt-get install strace`): skipped without it unless CHIME_REQUIRE_STRACE is set (CI sets it).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestTenant } from '../support/api.ts';
import { CHIME_CLI } from '../support/build.ts';
import { ADMIN_TOKEN } from '../support/chime-process.ts';
import { eventually } from '../support/eventually.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const HAVE_STRACE = spawnSync('strace', ['-V'], { stdio: 'ignore' }).status === 0;
const REQUIRE_STRACE = Boolean(process.env.CHIME_REQUIRE_STRACE);
/** The syscalls traced: socket reads and writes, file writes, and the two syncs. */
const TRACED = ['read', 'recvfrom', 'write', 'writev', 'sendto', 'sendmsg', 'pwrite64', 'pwritev', 'fdatasync', 'fsync'];
/** Jobs registered one by one; a PUT by key and a batch of BATCH more follow. */
const SINGLE = 4;
const BATCH = 3;

type Syscall = { pid: string; name: string; fd: string; path: string; args: string; result: number };

/**
 * The completed syscalls of an `strace -f -yy` trace, in the order they returned. A call another thread's output
 * interrupted is printed as `name(fd<path>, … <unfinished ...>` and later `<... name resumed>…) = result`.
 */
function parseTrace(text: string): Syscall[] {
  const calls: Syscall[] = [];
  const pending = new Map<string, Omit<Syscall, 'result'>>();
  for (const line of text.split('\n')) {
    const resumed = /^(\d+)\s+<\.\.\. (\w+) resumed>(.*)\)\s+=\s+(-?\d+)/.exec(line);
    if (resumed) {
      const head = pending.get(resumed[1]!);
      pending.delete(resumed[1]!);
      // strace prints `name(fd<path>,  <unfinished ...>`: the arguments go on after the comma and one space.
      if (head) calls.push({ ...head, args: `${head.args.trimEnd()} ${resumed[3]!}`, result: Number(resumed[4]) });
      continue;
    }
    // The path of a socket holds "->": only a TCP socket's is bracketed; no other path here holds ">".
    const call = /^(\d+)\s+(\w+)\((\d+)<((?:TCP|TCPv6):\[[^\]]*\]|[^>]*)>(.*)$/.exec(line);
    if (!call) continue;
    const [, pid, name, fd, path, rest] = call as unknown as [string, string, string, string, string, string];
    if (rest.endsWith('<unfinished ...>')) {
      pending.set(pid, { pid, name, fd, path, args: rest.slice(0, -'<unfinished ...>'.length) });
      continue;
    }
    const result = /\)\s+=\s+(-?\d+)[^=]*$/.exec(rest);
    if (result) calls.push({ pid, name, fd, path, args: rest, result: Number(result[1]) });
  }
  return calls;
}

const READS = new Set(['read', 'recvfrom']);
const SOCKET_WRITES = new Set(['write', 'writev', 'sendto', 'sendmsg']);
const FILE_WRITES = new Set(['write', 'writev', 'pwrite64', 'pwritev']);
const SYNCS = new Set(['fdatasync', 'fsync']);
/** Requests whose 2xx answer acknowledges a write. */
const ACKNOWLEDGED = /^(POST \/v1\/(tenants|jobs|jobs\/batch)|PUT \/v1\/jobs\/by-key\/[^ ]+) HTTP/;

type Verdict = {
  /** Acknowledgements seen: request line and whether a WAL sync completed between request and response. */
  acks: { request: string; synced: boolean }[];
  /** Callback requests written to the receiver. */
  callbacks: number;
  /** Writes that left the process while WAL bytes were written and not synced. */
  unsyncedOutputs: string[];
  walSyncs: number;
};

/**
 * Judges a trace of the service on `apiPort` calling back a receiver on `receiverPort` (TCP sockets are shown as
 * `TCP:[local->remote]`). PostgreSQL writes WAL at a commit, in the same call as the commit's sync (XLogFlush), or
 * when its WAL buffers fill mid-transaction; the test's transactions are far smaller than those buffers, so any WAL
 * written and not synced at an output is a commit that was not synced.
 */
function judge(calls: Syscall[], apiPort: number, receiverPort: number): Verdict {
  const isApi = (path: string) => new RegExp(`^TCP:\\[[^\\]]*:${apiPort}->`).test(path);
  const isCallback = (path: string) => new RegExp(`->[^\\]]*:${receiverPort}\\]$`).test(path);
  const isWal = (path: string) => path.includes('/pg_wal/');
  const verdict: Verdict = { acks: [], callbacks: 0, unsyncedOutputs: [], walSyncs: 0 };
  const unsynced = new Set<string>();
  /** Per API connection: its last request line and the WAL syncs counted when it was read. */
  const requests = new Map<string, { line: string; syncsAtRead: number }>();
  for (const c of calls) {
    if (c.result < 0) continue;
    if (isWal(c.path) && FILE_WRITES.has(c.name) && c.result > 0) unsynced.add(c.path);
    else if (isWal(c.path) && SYNCS.has(c.name)) {
      unsynced.delete(c.path);
      verdict.walSyncs++;
    } else if (isApi(c.path) && READS.has(c.name) && c.result > 0) {
      const line = /^, "([A-Z]+ [^ ]+ HTTP\/1\.1)/.exec(c.args);
      if (line) requests.set(c.path, { line: line[1]!, syncsAtRead: verdict.walSyncs });
    } else if ((isApi(c.path) || isCallback(c.path)) && SOCKET_WRITES.has(c.name)) {
      const start = /"((?:HTTP\/1\.1 \d{3})|(?:[A-Z]+ \/[^ ]*))/.exec(c.args)?.[1] ?? c.args.slice(0, 40);
      if (unsynced.size > 0) verdict.unsyncedOutputs.push(`${start} (unsynced: ${[...unsynced].join(', ')})`);
      if (isCallback(c.path) && /"[A-Z]+ \/hook\/\d+ HTTP/.test(c.args)) verdict.callbacks++;
      const request = requests.get(c.path);
      if (isApi(c.path) && request && /^HTTP\/1\.1 2\d\d/.test(start) && ACKNOWLEDGED.test(request.line)) {
        verdict.acks.push({ request: request.line, synced: verdict.walSyncs > request.syncsAtRead });
        requests.delete(c.path);
      }
    }
  }
  return verdict;
}

type Traced = { trace: string; apiPort: number; receiverPort: number; exitCode: number | null; output: string };

/**
 * Runs `chime serve` under strace on a fresh data folder, registers 1 tenant, SINGLE jobs, 1 by key and BATCH in a
 * batch, all due now, waits until every run succeeded, stops the service with SIGTERM and returns the trace.
 */
async function traceService(receiver: Receiver, env: Record<string, string>): Promise<Traced> {
  const scratch = await mkdtemp(join(tmpdir(), 'chime-durability-'));
  const traceFile = join(scratch, 'trace.txt');
  const child = spawn(
    'strace',
    [
      '-f',
      '-qq',
      '-yy',
      '--seccomp-bpf',
      '-s',
      '48',
      '-e',
      `trace=${TRACED.join(',')}`,
      '-o',
      traceFile,
      process.execPath,
      CHIME_CLI,
      'serve',
    ],
    {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        CHIME_DATA_DIR: join(scratch, 'data'),
        CHIME_ADMIN_TOKEN: ADMIN_TOKEN,
        CHIME_ALLOW_PRIVATE_DESTINATIONS: 'true',
        CHIME_LOG_LEVEL: 'info',
        HOST: '127.0.0.1',
        PORT: '0',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  try {
    // The port from the service's "listening" log line.
    const port = await eventually(
      () => {
        if (child.exitCode !== null) throw new Error(`strace exited with ${child.exitCode}: ${output}`);
        const line = output.split('\n').find((l) => l.includes('"msg":"listening"'));
        const port = line && /"port":(\d+)/.exec(line)?.[1];
        return port ? Number(port) : undefined;
      },
      { timeoutMs: 60_000, what: 'chime under strace to listen' },
    );
    // The service is strace's child; strace itself ignores SIGTERM while it runs a command into a file (-o).
    const pid = Number((await readFile(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8')).trim().split(/\s+/)[0]);
    const url = `http://127.0.0.1:${port}`;
    const tenant = await createTestTenant(url, 'durable');
    const job = (i: number) => ({ schedule: { type: 'delay', delayMs: 0 }, callback: { url: `${receiver.url}/hook/${i}` } });
    const jobIds: string[] = [];
    for (let i = 0; i < SINGLE; i++) {
      const r = await tenant.api.post('/v1/jobs', job(i));
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      jobIds.push(r.body.jobId);
    }
    const put = await tenant.api.request('PUT', '/v1/jobs/by-key/durable', job(SINGLE));
    expect(put.status, JSON.stringify(put.body)).toBe(201);
    jobIds.push(put.body.jobId);
    const batch = await tenant.api.post('/v1/jobs/batch', { jobs: Array.from({ length: BATCH }, (_, i) => job(SINGLE + 1 + i)) });
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    for (const r of batch.body.results) {
      expect(r.status).toBe(201);
      jobIds.push(r.job.jobId);
    }
    // Every run finished and reads back as succeeded: its finish committed before this answer left.
    await eventually(
      async () => {
        for (const id of jobIds) {
          const runs = (await tenant.api.get(`/v1/jobs/${id}/runs`)).body.runs as { status: string }[];
          if (runs[0]?.status !== 'succeeded') return false;
        }
        return true;
      },
      { timeoutMs: 30_000, what: 'every run to succeed' },
    );
    process.kill(pid, 'SIGTERM');
    const exitCode = await exited;
    return { trace: await readFile(traceFile, 'utf8'), apiPort: port, receiverPort: Number(new URL(receiver.url).port), exitCode, output };
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    await rm(scratch, { recursive: true, force: true });
  }
}

describe.skipIf(!HAVE_STRACE && !REQUIRE_STRACE)('embedded durability, traced with strace (invariant 1)', () => {
  let receiver: Receiver;
  beforeAll(async () => {
    if (!HAVE_STRACE) throw new Error('CHIME_REQUIRE_STRACE is set and strace is not installed (apt-get install strace)');
    receiver = await startReceiver();
  });
  afterAll(() => receiver?.close());

  it('syncs the WAL before every acknowledgement, every callback and every answer that shows a finished run', async () => {
    const t = await traceService(receiver, {});
    expect(t.exitCode, t.output).toBe(0);
    const v = judge(parseTrace(t.trace), t.apiPort, t.receiverPort);
    // The tenant, SINGLE jobs, the PUT and the batch.
    expect(
      v.acks.map((a) => a.request),
      JSON.stringify(v),
    ).toHaveLength(SINGLE + 3);
    expect(v.acks.filter((a) => !a.synced)).toEqual([]);
    expect(v.callbacks).toBeGreaterThanOrEqual(SINGLE + 1 + BATCH);
    expect(v.unsyncedOutputs).toEqual([]);
    expect(v.walSyncs).toBeGreaterThanOrEqual(v.acks.length + v.callbacks);
  }, 180_000);

  it('finds every acknowledgement unsynced with CHIME_EMBEDDED_SYNC=off (PGlite started with -F)', async () => {
    const t = await traceService(receiver, { CHIME_EMBEDDED_SYNC: 'off' });
    expect(t.exitCode, t.output).toBe(0);
    const v = judge(parseTrace(t.trace), t.apiPort, t.receiverPort);
    expect(v.acks).toHaveLength(SINGLE + 3);
    expect(v.acks.every((a) => !a.synced)).toBe(true);
    expect(v.walSyncs).toBe(0);
    expect(v.unsyncedOutputs.length).toBeGreaterThan(0);
  }, 180_000);
});
