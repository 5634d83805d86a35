// The orchestrator's own signing key pair (RSA 2048, RS256). Created on first start and kept in
// <data-dir>/auth-signing-key.pem, readable by the owner only; later starts reuse it so tokens
// issued before a restart stay valid.
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makePrivate } from '../storage/db.ts';

export const SIGNING_KEY_FILE = 'auth-signing-key.pem';

export interface SigningKey {
  privateKey: KeyObject;
  publicKey: KeyObject;
  /** Key id: SHA-256 of the DER public key (base64url), also put in the JWT header. */
  kid: string;
  /** Public JWK (for /acs/api/v1/auth/jwks). */
  jwk: Record<string, unknown>;
  /** True when the key was created by this call. */
  created: boolean;
}

export function fingerprint(publicKey: KeyObject): string {
  const der = publicKey.export({ type: 'spki', format: 'der' });
  return `SHA256:${createHash('sha256').update(der).digest('base64url')}`;
}

export function loadOrCreateSigningKey(dataDir: string): SigningKey {
  const file = join(dataDir, SIGNING_KEY_FILE);
  let pem: string;
  let created = false;
  try {
    pem = readFileSync(file, 'utf8');
    makePrivate(file); // tighten the mode if someone loosened it
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
    pem = pair.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    // 'wx': never overwrite a key another process wrote in the meantime.
    writeFileSync(file, pem, { mode: 0o600, flag: 'wx' });
    created = true;
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(pem);
  } catch {
    throw new Error(
      `the token signing key ${file} is not a PEM private key; restore it, or remove it to create a new one (tokens issued so far become invalid)`,
    );
  }
  if (privateKey.asymmetricKeyType !== 'rsa') throw new Error(`the token signing key ${file} is not an RSA key`);
  const publicKey = createPublicKey(privateKey);
  const kid = fingerprint(publicKey).slice('SHA256:'.length);
  const jwk = { ...(publicKey.export({ format: 'jwk' }) as Record<string, unknown>), kid, alg: 'RS256', use: 'sig' };
  return { privateKey, publicKey, kid, jwk, created };
}
