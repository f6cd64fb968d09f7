"""Drafts openapi/receta.json from the exchanges the black-box suite recorded (openapi/README.md):

    RECETA_RECORD=/tmp/exchanges.jsonl cargo xtask test
    python3 openapi/draft.py /tmp/exchanges.jsonl openapi/receta.json

The draft is a starting point, read and corrected by hand before it is committed.
"""
import json, sys, re, collections

# (method, template, tag, summary, auth) ; auth: admin | medic | admin-or-medic | pharmacy | none
OPS = [
 ("get","/api/v2/hospital/","Hospitals","List the hospitals the caller may see (API admin: all; medic: those with a live membership).","admin-or-medic"),
 ("post","/api/v2/hospital/","Hospitals","Create a hospital (JSON or multipart with `picture`/`university_logo`). A medic caller is linked to it (ADMIN, or MEMBER with `is_admin: false`).","admin-or-medic"),
 ("get","/api/v2/hospital/{hospital_id}","Hospitals","One hospital.","admin-or-medic"),
 ("patch","/api/v2/hospital/{hospital_id}/","Hospitals","Change a hospital (the API admin, or a medic with an ADMIN membership there).","admin-or-medic"),
 ("post","/api/v2/medics/","Medics","Create a medic; the response carries its token, shown only here.","admin"),
 ("get","/api/v2/medics/","Medics","The medics within the caller's reach (API admin: all; a medic with an ADMIN membership: the medics of the hospitals they manage).","admin-or-medic"),
 ("get","/api/v2/medics/{medic_id}","Medics","One medic within the caller's reach.","admin-or-medic"),
 ("patch","/api/v2/medics/{medic_id}/","Medics","Change a medic within the caller's reach (202). The token never changes; `password` is hashed again.","admin-or-medic"),
 ("get","/api/v2/search/medics/","Medics","Medics whose email contains `query` (API admin, or a medic with an ADMIN membership).","admin-or-medic"),
 ("get","/api/v2/management/memberships/","Memberships","The memberships of the hospitals the caller manages.","admin-or-medic"),
 ("post","/api/v2/management/memberships/","Memberships","Create (or reactivate) a membership on a hospital the caller manages.","admin-or-medic"),
 ("get","/api/v2/management/memberships/{membership_id}","Memberships","One membership (a manager of its hospital, or its medic).","admin-or-medic"),
 ("patch","/api/v2/management/memberships/{membership_id}/","Memberships","Change a membership's type, medic, hospital or `is_deleted`.","admin-or-medic"),
 ("delete","/api/v2/management/memberships/{membership_id}/","Memberships","Soft-delete a membership (204).","admin-or-medic"),
 ("get","/api/v2/memberships/{hospital_id}/","Memberships","Every membership of one hospital, for its managers (a bare array).","admin-or-medic"),
 ("get","/api/v2/locations/","Memberships","The calling medic's locations (a bare array).","medic"),
 ("patch","/api/v2/locations/update/","Memberships","Make a hospital the calling medic's active one.","medic"),
 ("get","/api/v2/patient/","Patients","The calling medic's patients (a bare array; `limit`, `offset`, `search`).","medic"),
 ("post","/api/v2/patient/","Patients","Create a patient (201). Accepts `Idempotency-Key`.","medic"),
 ("get","/api/v2/patient/{patient_uid}","Patients","One of the calling medic's patients, by uid (or id).","medic"),
 ("patch","/api/v2/patient/{patient_id}/","Patients","Change a patient (202), by id or uid.","medic"),
 ("get","/api/v2/rx-endpoint/","Prescriptions","The calling medic's prescriptions, newest first (`limit`, `offset`, `search`).","medic"),
 ("post","/api/v2/rx-endpoint/","Prescriptions","Issue a prescription (200, the create shape). Accepts `Idempotency-Key`.","medic"),
 ("get","/api/v2/rx-endpoint/{rx_id_or_signature}/","Prescriptions","By integer id: a page of one (the medic's own). By signature: one prescription (its medic or the API admin).","admin-or-medic"),
 ("get","/api/v2/rx-endpoint/{signature}/document/","Verification","The canonical document's exact bytes: their SHA-256 is the signature.","admin-or-medic"),
 ("post","/api/v2/rx-endpoint/{signature}/cancel/","Lifecycle","The issuing medic cancels a prescription (irreversible).","medic"),
 ("get","/api/v2/rx-endpoint/{signature}/dispenses/","Lifecycle","Every dispense, rejection and cancellation of a prescription, oldest first.","admin-or-medic"),
 ("get","/api/v2/medications/","Prescriptions","The medications the calling medic prescribed, newest first.","medic"),
 ("get","/api/v2/rx/pdf/{signature}/","Prescriptions","The PDF stored at issue, base64 in JSON.","admin-or-medic"),
 ("post","/api/v2/rx/resend/{signature}/","Notifications","Queue the prescription's email again (`email`, `cc`).","admin-or-medic"),
 ("get","/api/v2/rx/patient-landing/{signature}/","Landing","The patient landing as JSON: `{rx, campaigns, default_campaign}`.","admin-or-medic"),
 ("get","/api/v2/webhooks/","Notifications","Webhook subscriptions (no secrets).","admin"),
 ("post","/api/v2/webhooks/","Notifications","Register a webhook subscription; its URL must answer a signed ping with 2xx. `events` chooses what it receives.","admin"),
 ("get","/api/v2/webhooks/{webhook_id}/","Notifications","One subscription.","admin"),
 ("delete","/api/v2/webhooks/{webhook_id}/","Notifications","Delete a subscription (204).","admin"),
 ("get","/api/v2/deliveries/","Notifications","The delivery log (emails and webhooks), newest first.","admin"),
 ("post","/api/v2/deliveries/run/","Notifications","One pass of the outbox worker.","admin"),
 ("get","/api/v2/deliveries/{delivery_id}/","Notifications","One delivery with every attempt.","admin"),
 ("post","/api/v2/deliveries/{delivery_id}/replay/","Notifications","Make a delivery due again now.","admin"),
 ("get","/api/v2/drugs/","Drugs","The service's drug catalog (`search`).","admin-or-medic"),
 ("post","/api/v2/drugs/","Drugs","Load products into the drug catalog (API admin).","admin"),
 ("get","/api/v2/campaigns/","Campaigns","Pharmacy campaigns (API admin).","admin"),
 ("post","/api/v2/campaigns/","Campaigns","Create a campaign.","admin"),
 ("get","/api/v2/campaigns/{campaign_id}/","Campaigns","One campaign.","admin"),
 ("patch","/api/v2/campaigns/{campaign_id}/","Campaigns","Change a campaign.","admin"),
 ("delete","/api/v2/campaigns/{campaign_id}/","Campaigns","Delete a campaign (204).","admin"),
 ("get","/api/v2/pharmacies/","Pharmacies","Registered pharmacies (API admin).","admin"),
 ("post","/api/v2/pharmacies/","Pharmacies","Register a pharmacy; the response carries its token, shown only here.","admin"),
 ("get","/api/v2/pharmacies/{pharmacy_id}/","Pharmacies","One pharmacy.","admin"),
 ("patch","/api/v2/pharmacies/{pharmacy_id}/","Pharmacies","Change a pharmacy; `is_active: false` revokes its token.","admin"),
 ("get","/api/v2/pharmacies/{pharmacy_id}/calls/","Pharmacies","The pharmacy's call log, newest first.","admin"),
 ("get","/api/v2/pharmacy/rx/{signature}","Pharmacy calls","Look a prescription up by signature (pharmacy token).","pharmacy"),
 ("post","/api/v1/prescriptions/burn/{signature}","Pharmacy calls","Record a dispense (a sale). Accepts `Idempotency-Key`.","pharmacy"),
 ("post","/api/v1/prescriptions/reject/{signature}","Pharmacy calls","Reject a prescription (irreversible).","pharmacy"),
 ("get","/.well-known/receta-keys.json","Verification","The service's public keys (JWK), to verify seals.","none"),
 ("get","/api/v2/verify/{signature}","Verification","Whether a prescription is genuine, its state and issuer; nothing personal.","none"),
 ("get","/api/v2/openapi.json","Reference","This document.","none"),
 ("get","/docs","Reference","The human-readable API reference.","none"),
 ("get","/media/hospitals/{hospital_id}/{file}","Landing","A hospital's uploaded image (JPEG), no token.","none"),
 ("get","/rx/{signature}","Landing","The patient's page (HTML, Spanish), no token: the signature is the capability.","none"),
 ("get","/rx/{signature}/pdf","Landing","The stored PDF as a download, no token.","none"),
]


rec = [json.loads(l) for l in open(sys.argv[1])]
out = sys.argv[2]

def segs(p): return [s for s in p.split('?')[0].split('/') if s]
def match(t, p):
    t, p = segs(t), segs(p)
    return len(t) == len(p) and all((a.startswith('{') or a == b) for a, b in zip(t, p))
def op_for(method, path):
    cands = [o for o in OPS if o[0] == method.lower() and match(o[1], path)]
    if not cands: return None
    return max(cands, key=lambda o: sum(1 for s in segs(o[1]) if not s.startswith('{')))

samples = collections.defaultdict(list)   # (op, status) -> [response]
reqs = collections.defaultdict(list)      # op -> [request body] (2xx only)
ctypes = {}
for r in rec:
    o = op_for(r['method'], r['path'])
    if not o: continue
    key = (o[0], o[1])
    samples[(key, r['status'])].append(r['response'])
    ctypes[(key, r['status'])] = r.get('content_type') or ''
    if 200 <= r['status'] < 300 and isinstance(r.get('request'), dict):
        reqs[key].append(r['request'])

MESSAGE = {"$ref": "#/components/schemas/Message"}
FIELD_ERRORS = {"$ref": "#/components/schemas/FieldErrors"}

# Fields the API documents as possibly null, whatever the recorded samples happened to show.
NULLABLE = {"hospital", "sent", "clinic", "disabled_at", "seal", "pharmacy", "last_error", "default_campaign",
            "picture", "university_logo", "next", "previous", "subscription", "webhook_id", "status_code",
            "error", "campaign", "is_admin_membership"}

def nullable(key, schema):
    t = schema.get("type")
    if key in NULLABLE and t and t != "null":
        types = t if isinstance(t, list) else [t]
        if "null" not in types:
            schema = dict(schema, type=sorted(types + ["null"]))
    return schema

def infer(values):
    types = set()
    objs, arrs = [], []
    for v in values:
        if v is None: types.add('null')
        elif isinstance(v, bool): types.add('boolean')
        elif isinstance(v, int): types.add('integer')
        elif isinstance(v, float): types.add('number')
        elif isinstance(v, str): types.add('string')
        elif isinstance(v, list): types.add('array'); arrs.append(v)
        elif isinstance(v, dict): types.add('object'); objs.append(v)
    if 'number' in types: types.discard('integer')
    s = {}
    t = sorted(types)
    # Only nulls seen: say nothing of the type rather than promise it is always null.
    if not t or t == ['null']: return {}
    s['type'] = t[0] if len(t) == 1 else t
    if objs:
        keys = collections.OrderedDict()
        for o in objs:
            for k in o: keys[k] = True
        props = {k: nullable(k, infer([o[k] for o in objs if k in o])) for k in keys}
        s['properties'] = props
        req = [k for k in keys if all(k in o for o in objs)]
        if req: s['required'] = req
    if arrs:
        items = [x for a in arrs for x in a]
        if items: s['items'] = infer(items)
    return s

def shorten(v):
    if isinstance(v, str) and len(v) > 160: return v[:120] + '…'
    if isinstance(v, list): return [shorten(x) for x in v[:3]]
    if isinstance(v, dict): return {k: shorten(x) for k, x in v.items()}
    return v

def is_field_errors(v):
    return isinstance(v, dict) and v and all(isinstance(x, list) and all(isinstance(m, str) for m in x) for x in v.values())

PARAM_DOC = {
 "limit": "Results per page (default 20, at most 100).",
 "offset": "Index of the first result.",
 "search": "Text to match.",
 "query": "Text the email must contain.",
}
QUERY = {
 "/api/v2/hospital/": ["limit","offset"], "/api/v2/medics/": ["limit","offset"],
 "/api/v2/search/medics/": ["query","limit","offset"], "/api/v2/management/memberships/": ["limit","offset"],
 "/api/v2/patient/": ["limit","offset","search"], "/api/v2/rx-endpoint/": ["limit","offset","search"],
 "/api/v2/medications/": ["limit","offset"], "/api/v2/webhooks/": ["limit","offset"],
 "/api/v2/deliveries/": ["limit","offset"], "/api/v2/drugs/": ["limit","offset","search"],
 "/api/v2/campaigns/": ["limit","offset"], "/api/v2/pharmacies/": ["limit","offset"],
 "/api/v2/pharmacies/{pharmacy_id}/calls/": ["limit","offset"], "/api/v2/rx-endpoint/{signature}/dispenses/": ["limit","offset"],
}
SECURITY = {"admin": [{"AdminToken": []}], "medic": [{"MedicToken": []}],
            "admin-or-medic": [{"AdminToken": []}, {"MedicToken": []}], "pharmacy": [{"PharmacyToken": []}], "none": []}
REASON = {200:"OK",201:"Created",202:"Accepted",204:"No Content",400:"Invalid request: `{field: [messages]}`, or `{message}` for a body that is not a JSON object",
          401:"No valid token: `{\"message\": \"Invalid Token\"}`",403:"The caller lacks the right",404:"Not found",405:"Method not allowed",
          408:"The body did not arrive within 10 s",409:"The target's state does not allow it",413:"Body too large",
          414:"Request target too long",429:"Too many requests (`Retry-After`)",431:"Request headers too large",
          500:"Internal server error",503:"Busy: retry after `Retry-After` seconds"}
IDEMPOTENT = {("post","/api/v2/patient/"),("post","/api/v2/rx-endpoint/"),("post","/api/v1/prescriptions/burn/{signature}")}

# Operations whose 200 is not drafted from a recording: the document itself, and its page.
FIXED = {
 ("get", "/api/v2/openapi.json"): ("application/json", {"type": "object", "required": ["openapi", "info", "paths", "components"]}),
 ("get", "/docs"): ("text/html", None),
}

paths = collections.OrderedDict()
for (method, tmpl, tag, summary, auth) in OPS:
    key = (method, tmpl)
    op = {"tags": [tag], "summary": summary.split('.')[0] + '.', "description": summary,
          "operationId": re.sub(r'[^a-zA-Z0-9]+', '_', f"{method}_{tmpl}").strip('_'),
          "security": SECURITY[auth]}
    params = []
    for name in re.findall(r'\{(\w+)\}', tmpl):
        params.append({"name": name, "in": "path", "required": True, "schema": {"type": "string"}})
    for q in QUERY.get(tmpl, []):
        params.append({"name": q, "in": "query", "required": False,
                       "schema": {"type": "integer", "minimum": 0} if q in ("limit","offset") else {"type": "string"},
                       "description": PARAM_DOC[q]})
    if key in IDEMPOTENT:
        params.append({"name": "Idempotency-Key", "in": "header", "required": False, "schema": {"type": "string", "maxLength": 255},
                       "description": "A retry with the same key, principal and body answers the first response again (docs/api-notes.md)."})
    if params: op["parameters"] = params
    if method in ("post", "patch") and reqs.get(key):
        bodies = reqs[key]
        op["requestBody"] = {"required": method == "post", "content": {"application/json": {"schema": infer(bodies), "example": shorten(bodies[0])}}}
    responses = collections.OrderedDict()
    if key in FIXED:
        ct, schema = FIXED[key]
        content = {ct: {"schema": schema}} if schema else {ct: {"schema": {"type": "string"}}}
        responses["200"] = {"description": "OK", "content": content}
    statuses = sorted({s for (k, s) in samples if k == key and not (key in FIXED and s == 200)})
    # What any such operation can answer, seen in a test or not (the fuzzer finds the rest): the
    # host's own refusals (target or headers too large, busy) included.
    generic = {500, 414, 431, 503}
    if auth != "none":
        generic |= {401, 403}
    if "{" in tmpl:
        generic.add(404)
    if QUERY.get(tmpl) or method in ("post", "patch"):
        generic.add(400)
    if method in ("post", "patch"):
        generic |= {408, 413}
    if tmpl.startswith("/api/v1/") or tmpl.startswith("/api/v2/pharmacy/") or tmpl.startswith("/api/v2/verify/"):
        generic.add(429)
    if tmpl.startswith("/api/v1/") or tmpl.startswith("/api/v2/pharmacy/") or tmpl.startswith("/api/v2/rx-endpoint/{"):
        generic.add(409)
    if key in IDEMPOTENT:
        generic.add(409)
    if tmpl.startswith("/rx/") or tmpl.startswith("/media/") or tmpl == "/docs" or tmpl.startswith("/.well-known") or tmpl == "/api/v2/openapi.json":
        generic -= {400, 403}
    statuses = sorted(set(statuses) | generic)
    for st in statuses:
        vals = samples.get((key, st), [])
        ct = ctypes.get((key, st), 'application/json')
        r = {"description": REASON.get(st, str(st))}
        if st == 204:
            pass
        elif ct and not ct.startswith('application/json'):
            r["content"] = {ct.split(';')[0]: {"schema": {"type": "string", "format": "binary"}}}
        elif st in (401, 403, 405, 408, 409, 413, 414, 429, 431, 500, 503) and all(isinstance(v, dict) and set(v) == {"message"} for v in vals):
            r["content"] = {"application/json": {"schema": MESSAGE}}
        elif st == 400 and vals and all(is_field_errors(v) or (isinstance(v, dict) and set(v) == {"message"}) for v in vals):
            r["content"] = {"application/json": {"schema": {"anyOf": [FIELD_ERRORS, MESSAGE]}}}
        elif st == 404 and vals and all(isinstance(v, dict) and set(v) == {"message"} for v in vals):
            r["content"] = {"application/json": {"schema": MESSAGE}}
        elif vals:
            r["content"] = {"application/json": {"schema": infer(vals)}}
        elif st == 400:
            r["content"] = {"application/json": {"schema": {"anyOf": [FIELD_ERRORS, MESSAGE]}}}
        else:
            r["content"] = {"application/json": {"schema": MESSAGE}}
        if vals and "content" in r and "application/json" in r["content"] and vals[0] is not None:
            r["content"]["application/json"]["example"] = shorten(vals[0])
        responses[str(st)] = r
    op["responses"] = responses
    paths.setdefault(tmpl, collections.OrderedDict())[method] = op

doc = collections.OrderedDict()
doc["openapi"] = "3.1.0"
doc["info"] = {"title": "Receta: electronic prescriptions API", "version": "2.0.0",
  "description": "Hospitals, medics, patients and prescriptions (eRx) for Mexico; pharmacies that dispense them; "
                 "a digital seal anyone can verify. Every call sends `Authorization: Token <token>` unless it says otherwise. "
                 "Errors: 400 `{field: [messages]}` (or `{message}`), 401 `{\"message\": \"Invalid Token\"}`, 403/404/409/429 `{message}`. "
                 "Lists: `{count, next, previous, results}` with `limit` (default 20, at most 100) and `offset`. "
                 "The project's docs/ explain every choice."}
doc["servers"] = [{"url": "http://127.0.0.1:3000", "description": "`cargo xtask up`"}]
doc["tags"] = [{"name": t} for t in dict.fromkeys(o[2] for o in OPS)]
doc["paths"] = paths
doc["components"] = {
 "securitySchemes": {
   "AdminToken": {"type": "apiKey", "in": "header", "name": "Authorization", "description": "`Token <admin_token>`: the Spin variable `admin_token`."},
   "MedicToken": {"type": "apiKey", "in": "header", "name": "Authorization", "description": "`Token <token>`: the token returned once when the medic was created."},
   "PharmacyToken": {"type": "apiKey", "in": "header", "name": "Authorization", "description": "`Token <token>`: the token returned once when the pharmacy was registered; good only on the pharmacy calls."}},
 "schemas": {
   "Message": {"type": "object", "required": ["message"], "properties": {"message": {"type": "string"}}},
   "FieldErrors": {"type": "object", "minProperties": 1, "additionalProperties": {"type": "array", "minItems": 1, "items": {"type": "string"}},
                   "description": "One entry per field: every problem with the request at once."}}}
json.dump(doc, open(out, 'w'), ensure_ascii=False, indent=1)
missing = [f"{m.upper()} {t}" for (m, t, *_ ) in OPS if not any(k == (m, t) for (k, s) in samples)]
print("operations:", len(OPS), "unobserved:", missing)
