/**
 * Per-process resource figures read from Linux procfs (proc(5)): CPU time from `/proc/<pid>/stat` (utime + stime,
 * fields 14 and 15, in clock ticks of `getconf CLK_TCK`) and peak resident set size from `VmHWM` in
 * `/proc/<pid>/status`. Reads are synchronous and cheap (~20 µs), so the receiver can sample at the instant the
 * first callback arrives. Off Linux, or for a process that has exited, the functions return null.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

let ticks: number | null = null;

/** Clock ticks per second of `/proc/<pid>/stat` (usually 100). */
export function clockTicksPerSecond(): number {
  if (ticks === null) {
    try {
      ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticks = 100;
    }
  }
  return ticks;
}

/**
 * The fields of `/proc/<pid>/stat` from field 3 (state) on, so that field k is at index k - 3; null when the process
 * cannot be read. The command name (field 2) is parenthesised and may contain spaces: the split starts after its
 * closing parenthesis.
 */
export function statFields(pid: number): string[] | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** CPU seconds (user + system) the process `pid` has used so far, or null when it cannot be read. */
export function cpuSeconds(pid: number): number | null {
  const fields = statFields(pid);
  if (!fields) return null;
  // utime is field 14, stime field 15.
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) return null;
  return (utime + stime) / clockTicksPerSecond();
}

/** The parent's pid of `pid` (field 4 of `/proc/<pid>/stat`), or null when the process cannot be read. */
export function parentPid(pid: number): number | null {
  const fields = statFields(pid);
  return fields ? Number(fields[1]) : null;
}

/** Sum of `cpuSeconds` over `pids`, as a map pid → seconds (unreadable pids are left out). */
export function cpuSecondsOf(pids: readonly number[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const pid of pids) {
    const s = cpuSeconds(pid);
    if (s !== null) out[pid] = s;
  }
  return out;
}

/** Peak resident set size (`VmHWM`) of `pid` in MiB, or null when it cannot be read. */
export function peakRssMiB(pid: number): number | null {
  try {
    const m = /^VmHWM:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/**
 * CPU seconds spent between two samples of the same processes. A pid present only in `after` (started in between)
 * counts in full; one present only in `before` (exited) is lost, which makes the figure a lower bound.
 */
export function cpuDelta(before: Record<number, number>, after: Record<number, number>): number {
  let total = 0;
  for (const [pid, s] of Object.entries(after)) total += s - (before[Number(pid)] ?? 0);
  return total;
}

/**
 * CPU seconds a whole PostgreSQL server has used so far: its postmaster's own time, the time of the children it has
 * reaped (`cutime` + `cstime`, fields 16 and 17 of proc(5): exited backends), and the time of its live children
 * (backends, background workers). Unlike a sample of backend pids, nothing is lost when a connection closes.
 * @returns null when the postmaster cannot be read
 */
export function serverCpuSeconds(postmasterPid: number): number | null {
  const own = statFields(postmasterPid);
  if (!own) return null;
  // Field k is at index k - 3: ppid 4, utime 14, stime 15, cutime 16, cstime 17.
  let ticksUsed = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const f = statFields(Number(entry));
    if (f && Number(f[1]) === postmasterPid) ticksUsed += Number(f[11]) + Number(f[12]);
  }
  return ticksUsed / clockTicksPerSecond();
}
