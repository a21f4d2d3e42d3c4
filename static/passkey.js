// Passkeys on the console: the one script of the site. Forms marked data-passkey
// ("register" or "sign-in") ask the server for the ceremony's options, hand them to
// the browser's authenticator, and post its answer back. Without this script, or in
// a browser without WebAuthn, the forms stay hidden and user keys still sign in.
"use strict";

(function () {
  if (!window.PublicKeyCredential || !navigator.credentials) {
    return;
  }

  function fromB64url(s) {
    s = s.replace(/-/g, "+").replace(/_/g, "/");
    while (s.length % 4) s += "=";
    const bin = atob(s);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out.buffer;
  }

  function toB64url(buf) {
    const bytes = new Uint8Array(buf);
    let bin = "";
    for (let i = 0; i < bytes.length; i++) bin += String.fromCharCode(bytes[i]);
    return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  // The server's options are WebAuthn's JSON form, with binary members in base64url.
  function creationOptions(o) {
    if (PublicKeyCredential.parseCreationOptionsFromJSON) {
      return PublicKeyCredential.parseCreationOptionsFromJSON(o);
    }
    o.challenge = fromB64url(o.challenge);
    o.user.id = fromB64url(o.user.id);
    (o.excludeCredentials || []).forEach(function (c) { c.id = fromB64url(c.id); });
    return o;
  }

  function requestOptions(o) {
    if (PublicKeyCredential.parseRequestOptionsFromJSON) {
      return PublicKeyCredential.parseRequestOptionsFromJSON(o);
    }
    o.challenge = fromB64url(o.challenge);
    (o.allowCredentials || []).forEach(function (c) { c.id = fromB64url(c.id); });
    return o;
  }

  function answer(cred) {
    if (typeof cred.toJSON === "function") {
      return cred.toJSON();
    }
    const r = cred.response;
    const out = { id: cred.id, rawId: toB64url(cred.rawId), type: cred.type, response: { clientDataJSON: toB64url(r.clientDataJSON) } };
    if (r.attestationObject) {
      out.response.attestationObject = toB64url(r.attestationObject);
      if (r.getTransports) out.response.transports = r.getTransports();
    } else {
      out.response.authenticatorData = toB64url(r.authenticatorData);
      out.response.signature = toB64url(r.signature);
      if (r.userHandle) out.response.userHandle = toB64url(r.userHandle);
    }
    out.clientExtensionResults = cred.getClientExtensionResults();
    if (cred.authenticatorAttachment) out.authenticatorAttachment = cred.authenticatorAttachment;
    return out;
  }

  async function post(url, csrf, body, type) {
    const res = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": type, "X-CSRF-Token": csrf },
      body: body,
    });
    let data = {};
    try { data = await res.json(); } catch (e) { /* not JSON */ }
    if (!res.ok) {
      throw new Error(data.message || "The server refused it (" + res.status + ").");
    }
    return data;
  }

  async function run(form, status) {
    const kind = form.dataset.passkey;
    const csrf = form.elements.csrf.value;
    const fields = new URLSearchParams(new FormData(form));
    fields.delete("csrf");
    const options = await post(form.dataset.options, csrf, fields.toString(), "application/x-www-form-urlencoded");
    status.textContent = "Waiting for your passkey…";
    let cred;
    try {
      cred = kind === "register"
        ? await navigator.credentials.create({ publicKey: creationOptions(options.publicKey) })
        : await navigator.credentials.get({ publicKey: requestOptions(options.publicKey) });
    } catch (e) {
      throw new Error("No passkey was " + (kind === "register" ? "made" : "used") + " (" + e.name + ").");
    }
    const done = await post(form.action, csrf, JSON.stringify(answer(cred)), "application/json");
    window.location.assign(done.next);
  }

  document.querySelectorAll("form[data-passkey]").forEach(function (form) {
    const status = form.querySelector("[role=status]");
    form.hidden = false;
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      const button = form.querySelector("button");
      button.disabled = true;
      status.textContent = "";
      run(form, status).catch(function (e) {
        status.textContent = e.message;
        button.disabled = false;
      });
    });
  });
})();
