// The AdmissionReview envelope (admission.k8s.io/v1): checking what arrives, shaping what goes back. Pure.
// A malformed review gets a message that names the problem; a reply always echoes the request's uid.
import { asRecord } from "../../util/json.ts";
import type { AdmissionRequest, Cause, Decision, StatusReason } from "../admission.ts";

export const ADMISSION_API_VERSION = "admission.k8s.io/v1";
export const ADMISSION_KIND = "AdmissionReview";

export type ParsedReview = { ok: true; request: AdmissionRequest } | { ok: false; uid?: string; message: string };

const optionalString = (v: unknown): boolean => v === undefined || v === null || typeof v === "string";

/** Checks a decoded JSON body and extracts the request; the uid is returned with errors when it could be read. */
export function parseReview(body: unknown): ParsedReview {
  const review = asRecord(body);
  if (!review) return { ok: false, message: "request body is not an AdmissionReview object" };
  const request = asRecord(review["request"]);
  const rawUid = request?.["uid"];
  const uid = typeof rawUid === "string" && rawUid !== "" ? rawUid : undefined;
  const fail = (message: string): ParsedReview => (uid ? { ok: false, uid, message } : { ok: false, message });

  if (review["apiVersion"] !== ADMISSION_API_VERSION) {
    return fail(
      `unsupported AdmissionReview apiVersion ${JSON.stringify(review["apiVersion"] ?? null)}: ` +
        `this webhook serves ${ADMISSION_API_VERSION} (set admissionReviewVersions: ["v1"])`,
    );
  }
  if (review["kind"] !== ADMISSION_KIND) {
    return fail(`unexpected kind ${JSON.stringify(review["kind"] ?? null)}: want ${ADMISSION_KIND}`);
  }
  if (!request) return fail("AdmissionReview has no request");
  if (!uid) return fail("AdmissionReview request has no uid");

  const operation = request["operation"];
  if (typeof operation !== "string" || operation === "") return fail("request.operation is missing");
  const resource = asRecord(request["resource"]);
  const group = resource?.["group"] ?? "";
  const version = resource?.["version"] ?? "";
  const plural = resource?.["resource"];
  if (typeof group !== "string" || typeof version !== "string" || typeof plural !== "string" || plural === "") {
    return fail("request.resource must be {group, version, resource} with a resource name");
  }
  for (const field of ["name", "namespace"] as const) {
    if (!optionalString(request[field])) return fail(`request.${field} must be a string`);
  }
  const dryRun = request["dryRun"];
  if (dryRun !== undefined && dryRun !== null && typeof dryRun !== "boolean")
    return fail("request.dryRun must be a boolean");
  const userInfo = asRecord(request["userInfo"]);
  const username = userInfo?.["username"];

  const out: AdmissionRequest = { uid, operation, resource: { group, version, resource: plural } };
  if (typeof request["name"] === "string") out.name = request["name"];
  if (typeof request["namespace"] === "string") out.namespace = request["namespace"];
  if (typeof username === "string") out.userInfo = { username };
  if (request["oldObject"] !== undefined && request["oldObject"] !== null) out.oldObject = request["oldObject"];
  if (request["object"] !== undefined && request["object"] !== null) out.object = request["object"];
  if (dryRun === true) out.dryRun = true;
  return { ok: true, request: out };
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: {
    status: "Failure";
    code: number;
    reason: StatusReason;
    message: string;
    /** The blockers, machine-readable; kcp passes them through to the client unchanged. */
    details?: { causes: Cause[] };
  };
  warnings?: string[];
}

export interface AdmissionReviewReply {
  apiVersion: typeof ADMISSION_API_VERSION;
  kind: typeof ADMISSION_KIND;
  response: AdmissionResponse;
}

/** The reply the API server turns into `admission webhook "…" denied the request: <message>` for denials. */
export function reviewReply(uid: string, decision: Decision): AdmissionReviewReply {
  const response: AdmissionResponse = { uid, allowed: decision.allowed };
  if (!decision.allowed) {
    response.status = {
      status: "Failure",
      code: decision.code,
      reason: decision.statusReason,
      message: decision.message,
      ...(decision.causes?.length ? { details: { causes: decision.causes } } : {}),
    };
  } else if (decision.warnings) {
    response.warnings = decision.warnings;
  }
  return { apiVersion: ADMISSION_API_VERSION, kind: ADMISSION_KIND, response };
}

/** A plain metav1.Status, for transport errors where no review (and no uid) could be read. */
export function statusBody(code: number, reason: string, message: string): Record<string, unknown> {
  return { apiVersion: "v1", kind: "Status", metadata: {}, status: "Failure", code, reason, message };
}

/** An allowed review's reply up to its uid; the rest is `,"allowed":true}}`. Same text as reviewReply's JSON. */
const ALLOWED_HEAD = `{"apiVersion":"${ADMISSION_API_VERSION}","kind":"${ADMISSION_KIND}","response":{"uid":`;

/**
 * The reply as JSON text, the same bytes as `JSON.stringify(reviewReply(uid, decision))`: an allow without warnings
 * (the hot path) is its uid between two fixed texts, anything else goes through reviewReply.
 */
export function reviewReplyText(uid: string, decision: Decision): string {
  if (decision.allowed && !decision.warnings) return `${ALLOWED_HEAD}${JSON.stringify(uid)},"allowed":true}}`;
  return JSON.stringify(reviewReply(uid, decision));
}
