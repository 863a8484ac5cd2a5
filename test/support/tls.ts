/** Test certificates: a self-signed one for `localhost`, made with openssl, for HTTPS receivers and PostgreSQL's TLS. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** A certificate and its key: PEM text, and the files in the folder they were written to. */
export type SelfSignedCert = { cert: string; key: string; certFile: string; keyFile: string };

/**
 * A self-signed P-256 certificate for `localhost` (CN and subjectAltName, nothing else), valid one day, written to
 * `dir` as cert.pem and key.pem.
 * @throws when openssl is missing or fails
 */
export function selfSignedLocalhost(dir: string): SelfSignedCert {
  const keyFile = join(dir, 'key.pem');
  const certFile = join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost',
      '-keyout',
      keyFile,
      '-out',
      certFile,
    ],
    { stdio: 'pipe' },
  );
  return { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8'), certFile, keyFile };
}
