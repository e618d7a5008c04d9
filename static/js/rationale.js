// The POLLUX rationale rule in the browser: a copy of protocol/rationale.py (the authority)
// for quick feedback. Every parameter and message comes from the server (the scoring page
// renders RationaleRule.for_client() as JSON); tests/protocol/test_rationale_rule.py runs this file on
// the shared case list tests/data/rationale_cases.json.
(function (root) {
  "use strict";
  // Format (invisible) characters: zero-width space and joiners, soft hyphen, BOM...
  const INVISIBLE = /\p{Cf}/gu;
  // Python's [^\W\d_]: letters plus the numeric No/Nl; \d there is any decimal digit (Nd).
  const WORD = /[\p{L}\p{Nl}\p{No}]+(?:[-'’][\p{L}\p{Nl}\p{No}]+)*|\p{Nd}+/gu;
  const LETTER = /\p{L}/gu;
  // Python's str.strip(): Unicode whitespace (JS trim() also strips U+FEFF, removed above).
  function normalise(text) { return String(text || "").replace(INVISIBLE, "").trim(); }
  function scriptClass(ranges) {
    const hex = (n) => "\\u{" + n.toString(16) + "}";
    return new RegExp("[" + ranges.map((r) => hex(r[0]) + "-" + hex(r[1])).join("") + "]", "gu");
  }
  function count(text, re) { return (text.match(re) || []).length; }

  // Messages for the rationale of a chosen score (value: a number, "na" or "" for none).
  function errors(rawText, value, best, rule) {
    const m = rule.messages;
    if (value === "" || value === null || value === undefined) return [m.choose];
    const isNa = value === "na";
    // Lengths in code points, as Python's len() counts them.
    if ([...String(rawText || "")].length > rule.max_length && [...normalise(rawText)].length > rule.max_length) return [m.length];
    const text = normalise(rawText);
    if (!text) return [isNa ? m.na : m.required];
    const errs = [];
    const words = count(text, WORD);
    const oneWordOk = !isNa && Number(value) === Number(best);
    if (words < rule.min_words && !(oneWordOk && words >= 1)) errs.push(m.words);
    if (rule.script) {
      const letters = count(text, LETTER);
      const ours = count(text, scriptClass(rule.script_ranges));
      if (!(letters > 0 && ours >= rule.script_share * letters)) errs.push(m.script);
    }
    return errs;
  }

  const api = { errors: errors, normalise: normalise };
  if (typeof module !== "undefined" && module.exports) module.exports = api;
  else root.PolluxRationale = api;
})(typeof window !== "undefined" ? window : this);
