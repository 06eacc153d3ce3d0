// ../protection.test.ts again with the webhook in live lookup mode (--lookup=live): every DELETE lists the dependents in kcp.
process.env["E2E_LOOKUP"] = "live";
await import("../protection.test.ts");
