/** The result record every workload produces, one per system (and variant), consumed by report.ts. */
import type { SystemId } from '../systems/types.ts';
import type { WorkloadId } from './plan.ts';

export type BenchResult = {
  system: SystemId;
  workload: WorkloadId;
  /** E.g. `1,000,000 future` for the scale workload; null when the workload has one variant. */
  variant: string | null;
  /** Every run delivered and recorded (registration: every request accepted). */
  ok: boolean;
  /** Set when the run failed outright (an exception), with the message. */
  error?: string;
  /** Runs in the workload. */
  n: number | null;
  /** Distinct runs the receiver got. */
  delivered: number | null;
  /** Runs the system recorded as done. */
  recorded: number | null;
  /** Hit the time cap before everything was delivered and recorded. */
  capped: boolean;
  /** Named numbers: see report.ts for each one's meaning, unit and direction. */
  figures: Record<string, number | null>;
  notes: string[];
};
