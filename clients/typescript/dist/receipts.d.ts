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
export declare const JWKS_PATH = "/.well-known/jwks.json";
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
    by?: {
        handle: string;
        name?: string;
        person?: string;
        relayed_by?: string;
    };
    via?: string;
    decided_at: string;
    iat: number;
    [claim: string]: unknown;
}
/** The receipt is not one the bridge's keys signed (malformed, unknown key, altered). */
export declare class BadReceipt extends Error {
    constructor(message: string);
}
/** The bridge's public receipt keys (`GET /.well-known/jwks.json`). */
export declare function fetchJwks(bridgeUrl: string): Promise<Jwks>;
/**
 * The receipt's claims, once its signature is checked with `jwks` (the set itself, its JSON
 * text, or the bridge's address to fetch it from); throws `BadReceipt` otherwise.
 */
export declare function verifyReceipt(receipt: string, jwks: Jwks | string): Promise<ReceiptClaims>;
