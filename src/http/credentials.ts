/** Reading the API key off a request's Authorization header. */
const BEARER_PATTERN = /^Bearer\s+(\S+)$/i;
const BASIC_PATTERN = /^Basic\s+(\S+)$/i;

/** The API key of a request: Bearer, or Basic with the key as password (git clients). */
export function credentialOf(header: string | undefined): string | null {
  if (!header) return null;
  const bearer = BEARER_PATTERN.exec(header);
  if (bearer) return bearer[1];
  const basic = BASIC_PATTERN.exec(header);
  if (basic) {
    const decoded = Buffer.from(basic[1], 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon >= 0 ? decoded.slice(colon + 1) : null;
  }
  return null;
}
