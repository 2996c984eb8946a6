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
const TOLERANCE_S = 300; // refuse replays older (or newer) than 5 minutes
const WHSEC = "whsec_";
const encoder = new TextEncoder();
function lowerHeaders(headers) {
    const found = new Map();
    const entries = typeof Headers !== "undefined" && headers instanceof Headers
        ? [...headers.entries()] : Object.entries(headers);
    for (const [key, value] of entries) {
        if (value !== undefined)
            found.set(key.toLowerCase(), Array.isArray(value) ? value.join(" ") : String(value));
    }
    return found;
}
function bytes(body) {
    return typeof body === "string" ? encoder.encode(body) : new Uint8Array(body);
}
function fromBase64(text) {
    try {
        const padded = text + "=".repeat((4 - (text.length % 4)) % 4);
        if (!/^[A-Za-z0-9+/]*={0,2}$/.test(padded))
            return null;
        return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
    }
    catch {
        return null;
    }
}
const toBase64 = (data) => btoa(String.fromCharCode(...data));
const toHex = (data) => [...data].map((b) => b.toString(16).padStart(2, "0")).join("");
/** The HMAC key of a Standard Webhooks secret; null for a broken whsec_ secret. */
function standardKey(secret) {
    if (!secret.startsWith(WHSEC))
        return encoder.encode(secret);
    const key = fromBase64(secret.slice(WHSEC.length));
    return key?.length ? key : null;
}
/** The same key as a `whsec_` secret, for an off-the-shelf Standard Webhooks verifier. */
export function standardSecret(secret) {
    return secret.startsWith(WHSEC) ? secret : WHSEC + toBase64(encoder.encode(secret));
}
async function hmac(key, ...parts) {
    const cryptoKey = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    const data = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const part of parts) {
        data.set(part, at);
        at += part.length;
    }
    return new Uint8Array(await crypto.subtle.sign("HMAC", cryptoKey, data));
}
/** Compare in time that does not depend on where the strings differ (their length is public). */
function same(expected, given) {
    const a = encoder.encode(expected);
    const b = encoder.encode(given);
    if (a.length !== b.length)
        return false;
    let diff = 0;
    for (let i = 0; i < a.length; i++)
        diff |= a[i] ^ b[i];
    return diff === 0;
}
/** The signature headers for `body`, the `scheme` way (what the daemon sends; for tests and relays). */
export async function signatureHeaders(scheme, secret, body, messageId, timestamp = Math.floor(Date.now() / 1000)) {
    const data = bytes(body);
    if (scheme === "hitl") {
        const mac = await hmac(encoder.encode(secret), encoder.encode(`${timestamp}.`), data);
        return { "X-Hitl-Timestamp": String(timestamp), "X-Hitl-Signature": `v1=${toHex(mac)}` };
    }
    const key = standardKey(secret);
    if (!key)
        throw new TypeError("a whsec_ secret must be whsec_ followed by base64");
    const mac = await hmac(key, encoder.encode(`${messageId}.${timestamp}.`), data);
    return { "webhook-id": messageId, "webhook-timestamp": String(timestamp), "webhook-signature": `v1,${toBase64(mac)}` };
}
/**
 * True when `body` (the raw bytes or text as received, before any JSON parsing) was signed with
 * `secret` within `toleranceS` of now, either way: Standard Webhooks headers when present, else X-Hitl-*.
 */
export async function verifyCallback(secret, headers, body, { toleranceS = TOLERANCE_S, now = Date.now() / 1000 } = {}) {
    const lower = lowerHeaders(headers);
    const standard = lower.has("webhook-signature");
    const stamp = lower.get(standard ? "webhook-timestamp" : "x-hitl-timestamp") ?? "";
    if (!/^\d{1,12}$/.test(stamp))
        return false;
    const timestamp = Number(stamp);
    if (Math.abs(now - timestamp) > toleranceS)
        return false;
    const data = bytes(body);
    if (!standard) {
        const expected = await signatureHeaders("hitl", secret, data, "", timestamp);
        return same(expected["X-Hitl-Signature"], lower.get("x-hitl-signature") ?? "");
    }
    const messageId = lower.get("webhook-id") ?? "";
    if (!messageId || !standardKey(secret))
        return false;
    const expected = (await signatureHeaders("standard", secret, data, messageId, timestamp))["webhook-signature"];
    // a space-separated list: several signatures while a secret is being rotated
    return lower.get("webhook-signature").split(" ").some((given) => same(expected, given));
}
