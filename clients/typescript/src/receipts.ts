/**
 * Signed receipts: check that a person decided, with the bridge's public keys.
 *
 * Every outcome the bridge writes back carries `receipt`, a compact JWS (RFC 7515) signed with
 * EdDSA over Ed25519 (RFC 8037), whose keys are at `/.well-known/jwks.json`:
 *
 * ```ts
 * const claims = await verifyReceipt(body.receipt, "http://127.0.0.1:8787");   // fetches the JWKS
 * claims.sub, claims.state, claims.by?.handle, claims.via, claims.values
 * ```
 *
 * Only the compact form, only `alg: "EdDSA"` with an Ed25519 key named by `kid` in the set:
 * anything else (another alg, `none`, an unknown key, a byte changed) throws `BadReceipt`.
 * Uses only WebCrypto (`crypto.subtle`, Ed25519: Node 20+, Deno, Bun, recent browsers).
 */

const MAX_RECEIPT = 16_384; // a receipt is a few hundred bytes; anything far larger is not one
const COMPACT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

export const JWKS_PATH = "/.well-known/jwks.json";

/** One public key of the set (RFC 7517): an Ed25519 key has `kty: "OKP"`, `crv: "Ed25519"`, `x`. */
export interface Jwk {
  kty: string;
  crv?: string;
  x?: string;
  kid?: string;
  alg?: string;
  use?: string;
}

export interface Jwks {
  keys: Jwk[];
}

/** What a receipt states (see docs/guides/audits.md). */
export interface ReceiptClaims {
  iss: string;
  sub: string;
  question_sha256: string;
  state: "answered" | "expired" | "cancelled" | string;
  route?: string;
  values?: Record<string, unknown> | null;
  by?: { handle: string; name?: string; person?: string; relayed_by?: string };
  via?: string;
  decided_at: string;
  iat: number;
  [claim: string]: unknown;
}

/** The receipt is not one the bridge's keys signed (malformed, unknown key, altered). */
export class BadReceipt extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BadReceipt";
  }
}

function fromBase64Url(part: string): Uint8Array<ArrayBuffer> {
  const base64 = part.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (part.length % 4)) % 4);
  return Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
}

function json(part: string, what: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(decoder.decode(fromBase64Url(part)));
    if (value !== null && typeof value === "object" && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // fall through
  }
  throw new BadReceipt(`the receipt's ${what} is not a JSON object`);
}

/** The bridge's public receipt keys (`GET /.well-known/jwks.json`). */
export async function fetchJwks(bridgeUrl: string): Promise<Jwks> {
  const response = await fetch(bridgeUrl.replace(/\/+$/, "") + JWKS_PATH);
  if (!response.ok) throw new BadReceipt(`${JWKS_PATH} answered HTTP ${response.status}`);
  return (await response.json()) as Jwks;
}

/**
 * The receipt's claims, once its signature is checked with `jwks` (the set itself, its JSON
 * text, or the bridge's address to fetch it from); throws `BadReceipt` otherwise.
 */
export async function verifyReceipt(receipt: string, jwks: Jwks | string): Promise<ReceiptClaims> {
  if (typeof receipt !== "string" || receipt.length > MAX_RECEIPT || !COMPACT.test(receipt)) {
    throw new BadReceipt("not a compact JWS (three base64url parts)");
  }
  const keys: Jwks = typeof jwks === "string"
    ? (jwks.trimStart().startsWith("{") ? (JSON.parse(jwks) as Jwks) : await fetchJwks(jwks))
    : jwks;
  const [head, payload, signature] = receipt.split(".") as [string, string, string];
  const header = json(head, "header");
  if (header.alg !== "EdDSA") throw new BadReceipt(`the receipt's alg is ${String(header.alg)}, not EdDSA`);
  if (Array.isArray(header.crit)) throw new BadReceipt("the receipt names critical extensions this client does not know");
  const jwk = Array.isArray(keys?.keys)
    ? keys.keys.find((k) => k && k.kid === header.kid && k.kty === "OKP" && k.crv === "Ed25519")
    : undefined;
  if (jwk === undefined || typeof jwk.x !== "string") throw new BadReceipt(`no Ed25519 key ${String(header.kid)} in the key set`);
  let ok = false;
  try {
    const key = await crypto.subtle.importKey("jwk", { kty: "OKP", crv: "Ed25519", x: jwk.x }, { name: "Ed25519" },
      false, ["verify"]);
    ok = await crypto.subtle.verify({ name: "Ed25519" }, key, fromBase64Url(signature),
      encoder.encode(`${head}.${payload}`));
  } catch (error) {
    throw new BadReceipt(`the receipt does not verify: ${(error as Error).message}`);
  }
  if (!ok) throw new BadReceipt("the receipt does not verify: its signature does not match");
  const claims = json(payload, "payload");
  if (typeof claims.sub !== "string") throw new BadReceipt("the receipt's claims are not a hitl-bridge receipt");
  return claims as ReceiptClaims;
}
