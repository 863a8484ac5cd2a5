/**
 * Drives the real `chime node` process (`npx tsx src/cli.ts node`, from the repository root) through its stdin and
 * stdout, as a Maelstrom-style harness would. Used by the node protocol's process tests.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The repository root (this file is test/node/harness.ts). */
export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A parsed reply line. */
export type Reply = { src: string; dest: string; body: { type: string; in_reply_to?: number; [field: string]: unknown } };

/** One running node process. Collects every stdout line and all of stderr. */
export class NodeProcess {
  /** Every complete stdout line, in order. */
  readonly lines: string[] = [];
  /** Everything written to stderr. */
  stderr = '';
  /** Exit code and signal, once exited. */
  exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  private partial = '';
  private cursor = 0;
  private nextMsgId = 1;
  private readonly waiters = new Set<() => void>();
  private readonly exited: Promise<void>;

  private constructor(private readonly child: ChildProcessWithoutNullStreams) {
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      const parts = (this.partial + chunk).split('\n');
      this.partial = parts.pop()!;
      this.lines.push(...parts);
      this.notify();
    });
    // Always drain stderr, or a chatty child would block on a full pipe.
    child.stderr.on('data', (chunk: string) => {
      this.stderr += chunk;
      this.notify();
    });
    child.stdin.on('error', () => {}); // EPIPE if the child died; the test sees it through `exit`
    this.exited = new Promise((resolve) => {
      child.on('close', (code, signal) => {
        this.exit = { code, signal };
        this.notify();
        resolve();
      });
    });
  }

  /**
   * Starts `npx tsx src/cli.ts node` in the repository root, in its own process group (see `kill`), and waits for
   * its `chime node: ready` log line, so that the reply deadlines of `nextLine` do not include start-up (npx and
   * tsx's transform take over 10 s on a loaded CI machine).
   * @throws Error when the node is not ready within `readyTimeoutMs` (with stderr, to see why)
   */
  static async start(readyTimeoutMs = 60_000): Promise<NodeProcess> {
    const child = spawn('npx', ['tsx', 'src/cli.ts', 'node'], { cwd: REPO_ROOT, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    const node = new NodeProcess(child);
    if (!(await node.waitFor(() => /chime node: ready/.test(node.stderr), readyTimeoutMs))) {
      node.kill();
      throw new Error(`chime node not ready within ${readyTimeoutMs} ms (exit ${JSON.stringify(node.exit)}); stderr:\n${node.stderr}`);
    }
    return node;
  }

  private notify(): void {
    for (const w of [...this.waiters]) w();
  }

  /** Waits until `predicate()` holds, the process has exited, or `timeoutMs` has passed; returns the predicate. */
  async waitFor(predicate: () => boolean, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      const left = deadline - Date.now();
      if (left <= 0 || this.exit) return predicate();
      await new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          this.waiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, left);
        this.waiters.add(done);
      });
    }
    return true;
  }

  /** Writes one raw line (a line break is added). Resolves once the data is handed to the pipe. */
  async sendRaw(line: string): Promise<void> {
    if (!this.child.stdin.write(`${line}\n`)) await new Promise((resolve) => this.child.stdin.once('drain', resolve));
  }

  /** Writes one message as a JSON line. */
  send(message: unknown): Promise<void> {
    return this.sendRaw(JSON.stringify(message));
  }

  /**
   * The next stdout line not yet taken, as a string.
   * @throws Error when none arrives within `timeoutMs` (with stderr, to see why)
   */
  async nextLine(timeoutMs = 10_000): Promise<string> {
    const ok = await this.waitFor(() => this.lines.length > this.cursor, timeoutMs);
    if (!ok) {
      throw new Error(`no reply line within ${timeoutMs} ms (exit ${JSON.stringify(this.exit)}); stderr:\n${this.stderr}`);
    }
    return this.lines[this.cursor++]!;
  }

  /** The next stdout line, parsed. */
  async nextReply(timeoutMs?: number): Promise<Reply> {
    return JSON.parse(await this.nextLine(timeoutMs)) as Reply;
  }

  /**
   * Sends `{ src: "c1", dest: "n1", body }` with the next msg_id (unless `body` has one) and returns the reply,
   * checking its envelope: `src` "n1", `dest` "c1", `in_reply_to` the msg_id.
   */
  async rpc(body: Record<string, unknown>): Promise<Reply['body']> {
    const msgId = (body.msg_id as number | undefined) ?? this.nextMsgId++;
    await this.send({ src: 'c1', dest: 'n1', body: { ...body, msg_id: msgId } });
    const r = await this.nextReply();
    if (r.src !== 'n1' || r.dest !== 'c1' || r.body.in_reply_to !== msgId) {
      throw new Error(`reply does not answer msg ${msgId} from c1: ${JSON.stringify(r)}`);
    }
    return r.body;
  }

  /** Ends stdin and waits for the process to exit. @throws Error when it does not exit within `timeoutMs` */
  async close(timeoutMs = 10_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    this.child.stdin.end();
    if (!(await this.waitFor(() => this.exit !== null, timeoutMs))) {
      this.kill();
      throw new Error(`node did not exit within ${timeoutMs} ms of end of input; stderr:\n${this.stderr}`);
    }
    await this.exited;
    return this.exit!;
  }

  /** Text left on stdout after the last line break (should be empty: every reply ends its line). */
  get unterminated(): string {
    return this.partial;
  }

  /** Kills the process group (npx, tsx and node) if the process still runs (test clean-up). */
  kill(): void {
    if (this.exit !== null || this.child.pid === undefined) return;
    try {
      process.kill(-this.child.pid, 'SIGKILL');
    } catch {
      this.child.kill('SIGKILL');
    }
  }
}
