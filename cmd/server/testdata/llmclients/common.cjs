// What both clients' scripts share: the environment, the protected values to write
// (FORMS, taken in turn) and how a call that may throw is recorded.
'use strict';

const env = process.env;
const forms = JSON.parse(env.FORMS);
let n = 0;
const form = () => forms[n++ % forms.length];

// caught runs call and says whether it threw and what: the error's class, status,
// type, message, and the code codeOf reads from it.
async function caught(call, codeOf) {
  try {
    await call();
    return { thrown: false };
  } catch (e) {
    return { thrown: true, name: e.constructor.name, status: e.status, type: e.type, code: codeOf(e), message: e.message };
  }
}

module.exports = { env, form, caught };
