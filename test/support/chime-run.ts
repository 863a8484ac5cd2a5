/**
 * One-shot `chime` commands as a user runs them (the built CLI, `node dist/node/cli.mjs <args>`, one process, as
 * `startChime` does), for tests of start-up failures and of commands that exit (`keys rotate-jwt`, `migrate`), and a
 * hard kill of a running `chime` with everything it started.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { spawnChime } from './build.ts';
import { ADMIN_TOKEN } from './chime-process.ts';

export type ChimeRun = {
  /** Exit code; null when ended by a signal (then `signal` is set). */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Wall time from spawn to exit, in ms. */
  durationMs: number;
};

/**
 * Runs `chime <args>` with `env` (plus PATH, HOME, the test admin token, warn-level logs and private destinations
 * allowed, as `startChime` does) and waits for it to exit.
 * @throws Error when it has not exited after `timeoutMs` (it is killed first), with its output
 */
export function runChime(env: Record<string, string>, args: string[], timeoutMs = 60_000): Promise<ChimeRun> {
  const started = Date.now();
  const child = spawnChime(args, {
    CHIME_ADMIN_TOKEN: ADMIN_TOKEN,
    CHIME_ALLOW_PRIVATE_DESTINATIONS: 'true',
    CHIME_LOG_LEVEL: 'warn',
    ...env,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      killProcessTree(child.pid!);
      reject(new Error(`chime ${args.join(' ')} did not exit within ${timeoutMs} ms; output:\n${stdout}${stderr}`));
    }, timeoutMs);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, durationMs: Date.now() - started });
    });
  });
}

/** The pids of every live descendant of `pid` (Linux: /proc/<pid>/task/<tid>/children), deepest last. */
export function descendantsOf(pid: number): number[] {
  const out: number[] = [];
  const visit = (p: number) => {
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${p}/task`);
    } catch {
      return; // already gone
    }
    for (const t of tasks) {
      let children = '';
      try {
        children = readFileSync(`/proc/${p}/task/${t}/children`, 'utf8');
      } catch {
        continue;
      }
      for (const c of children.trim().split(/\s+/).filter(Boolean).map(Number)) {
        out.push(c);
        visit(c);
      }
    }
  };
  visit(pid);
  return out;
}

/**
 * SIGKILLs `pid` and all its descendants at once (a process started through a wrapper, such as npm or the `tsx` CLI,
 * runs the program in a child that would otherwise live on as an orphan). Descendants are listed first, then all
 * are killed.
 * @returns the pids signalled
 */
export function killProcessTree(pid: number): number[] {
  const pids = [...descendantsOf(pid), pid];
  for (const p of pids) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

/** Whether a process with this pid exists (and is not a zombie). */
export function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 3, after the parenthesised command name: the state; Z = zombie, X = dead.
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}
