import type { Clock } from '../domain/clock.ts';
import type { Cipher } from './cipher.ts';
import type { Executor } from './db.ts';

/** What every store function needs: where to run SQL, how to seal secrets, what time it is. */
export type StoreContext = { db: Executor; cipher: Cipher; clock: Clock };
