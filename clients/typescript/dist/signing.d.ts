/**
 * Checking a signed callback, both ways the bridge signs them.
 *
 * `hitl` (the default): `X-Hitl-Timestamp: <unix seconds>`,
 * `X-Hitl-Signature: v1=<hex HMAC-SHA256(secret, "<timestamp>.<raw body>")>`; the key is the
 * secret string's UTF-8 bytes.
 *
 * `standard` (Standard Webhooks): `webhook-id`, `webhook-timestamp`,
 * `webhook-signature: v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<raw body>")>`; a
 * `whsec_<base64>` secret is the base64 of the key (as every Standard Webhooks library reads
 * it), any other secret is the key's raw UTF-8 bytes (`standardSecret(secret)` gives its
 * whsec_ form for an off-the-shelf verifier).
 *
 * Uses only WebCrypto (`crypto.subtle`): Node 18+, Deno, Bun, browsers, edge runtimes.
 */
export type HeadersLike = Headers | Record<string, string | string[] | undefined>;
export interface VerifyOptions {
    toleranceS?: number;
    /** unix seconds; default: now */
    now?: number;
}
/** The same key as a `whsec_` secret, for an off-the-shelf Standard Webhooks verifier. */
export declare function standardSecret(secret: string): string;
/** The signature headers for `body`, the `scheme` way (what the daemon sends; for tests and relays). */
export declare function signatureHeaders(scheme: "hitl" | "standard", secret: string, body: string | Uint8Array, messageId: string, timestamp?: number): Promise<Record<string, string>>;
/**
 * True when `body` (the raw bytes or text as received, before any JSON parsing) was signed with
 * `secret` within `toleranceS` of now, either way: Standard Webhooks headers when present, else X-Hitl-*.
 */
export declare function verifyCallback(secret: string, headers: HeadersLike, body: string | Uint8Array | ArrayBuffer, { toleranceS, now }?: VerifyOptions): Promise<boolean>;
