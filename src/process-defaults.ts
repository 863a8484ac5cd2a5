/**
 * The defaults of a process's address and embedded database (API.md "Start-up and configuration"), apart from
 * config.ts so that `chime --help` can print them without loading zod or anything else.
 */

/** TCP port the HTTP server listens on. */
export const DEFAULT_PORT = 8080;
/** Address the HTTP server listens on (all IPv4 interfaces). */
export const DEFAULT_HOST = '0.0.0.0';
/** Folder of the embedded database, relative to the working directory. */
export const DEFAULT_DATA_DIR = './.chime';
