// t/contract/client.ts: a small client of mod_svc, typed only by what
// openapi-typescript generates from GET /api/openapi.json. t/kernel/openapi.t
// writes those types to api.d.ts beside a copy of this file and compiles it
// with `tsc --strict`: it reads a token's id and a run's status as strings,
// and the checks at the end fail the compilation if any operation's JSON
// success is typed unknown or Record<string, never> (an untyped answer).
import type { components, operations, paths } from "./api";

type Problem = components["schemas"]["Problem"];

// The JSON body of a path's method at a status.
type Body<P extends keyof paths, M extends keyof paths[P], S extends number> =
    paths[P][M] extends { responses: { [K in S]: { content: { "application/json": infer B } } } }
        ? B
        : never;

async function call<T>(base: string, token: string, method: string, path: string,
                       body?: unknown): Promise<T> {
    const res = await fetch(base + path, {
        method,
        headers: {
            Authorization: `Bearer ${token}`,
            ...(body === undefined ? {} : { "Content-Type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!res.ok) {
        const problem = (await res.json()) as Problem;
        throw new Error(`${problem.status} ${problem.code}: ${problem.detail} (${problem.request_id})`);
    }
    return (await res.json()) as T;
}

// A token: made, then found again in the list.
export async function newestTokenId(base: string, token: string): Promise<string> {
    const made = await call<Body<"/api/me/tokens", "post", 201>>(base, token, "POST",
        "/api/me/tokens", { name: "ci", scope: "read" });
    const secret: string = made.token;
    const id: string = made.id;
    const page = await call<Body<"/api/me/tokens", "get", 200>>(base, token, "GET",
        "/api/me/tokens");
    const first: string = page.data[0].id;
    const next: string | null = page.next_cursor;
    const expires: string | null = page.data[0].expires_at;
    const org: string | undefined = page.data[0].org?.slug;
    return secret.length > 0 && next !== "" && expires !== "" && org !== "" ? first : id;
}

// A run's status, as a string and as the enum the document declares.
export async function runStatus(base: string, token: string, org: string, project: string,
                                run: string): Promise<string> {
    const got = await call<Body<"/api/orgs/{orgSlug}/projects/{projectSlug}/runs/{runId}",
        "get", 200>>(base, token, "GET", `/api/orgs/${org}/projects/${project}/runs/${run}`);
    const status: string = got.status;
    const known: "queued" | "running" | "succeeded" | "failed" | "cancelled" = got.status;
    const commit: string | undefined = got.result?.commit;
    const code: string | undefined = got.error?.code;
    return known === "succeeded" && commit ? commit : code ?? status;
}

// --- No JSON success of any operation is untyped -------------------------------

type IsUnknown<T> = unknown extends T ? true : false;
type IsEmptyRecord<T> = string extends keyof T ? ([T[string]] extends [never] ? true : false)
                                               : false;
type Untyped<B> = IsUnknown<B> extends true ? true
    : IsEmptyRecord<B> extends true ? true
    : B extends { data: unknown[] } ? IsUnknown<B["data"][number]>
    : false;

type SuccessBody<R> = {
    [S in keyof R]: S extends 200 | 201 | 202
        ? R[S] extends { content: { "application/json": infer B } } ? B : never
        : never;
}[keyof R];

type UntypedOperations = {
    [Op in keyof operations]: [SuccessBody<operations[Op]["responses"]>] extends [never]
        ? never
        : Untyped<SuccessBody<operations[Op]["responses"]>> extends false ? never : Op;
}[keyof operations];

// A compile error here names the operations whose answers are untyped.
export const everyAnswerTyped: [UntypedOperations] extends [never] ? true : UntypedOperations =
    true;
