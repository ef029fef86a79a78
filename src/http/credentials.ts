/** Reading the API key off a request's Authorization header. */
import { API_KEY_PATTERN } from '../service/ids.js';

const BEARER_PATTERN = /^Bearer\s+(\S+)$/i;
const BASIC_PATTERN = /^Basic\s+(\S+)$/i;

/**
 * The API key of a request: Bearer, or Basic with the key as password (git clients, any user name).
 * As GitHub takes a token, Basic with the key as user name works too when the password is not a
 * key: `<key>:x-oauth-basic`, or `<key>:` (a URL with the key before the @ and an empty password).
 */
export function credentialOf(header: string | undefined): string | null {
  if (!header) return null;
  const bearer = BEARER_PATTERN.exec(header);
  if (bearer) return bearer[1];
  const basic = BASIC_PATTERN.exec(header);
  if (basic) {
    const decoded = Buffer.from(basic[1], 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) return null;
    const user = decoded.slice(0, colon);
    const password = decoded.slice(colon + 1);
    return !API_KEY_PATTERN.test(password) && API_KEY_PATTERN.test(user) ? user : password;
  }
  return null;
}
