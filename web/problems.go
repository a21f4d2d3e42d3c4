package web

// problems explains the directory's problem codes to the person who follows their type
// URL: what happened, and what to do about it. A code without an entry gets a page
// with its title and a pointer to the answer's detail.
var problems = map[string]struct {
	meaning, remedy string
}{
	"verified_reserved": {
		"The request carried the verified parameter. It is reserved for a future verified badge that does not exist yet, so the directory refuses it rather than quietly ignoring it.",
		"Drop verified from the query. To list the sellers the directory trusts most, filter with verdict=proceed."},
	"query_too_long": {
		"The search query q is longer than 1024 bytes of UTF-8 once trimmed.",
		"Shorten the query to the words that matter; a sentence or two is plenty."},
	"invalid_parameter": {
		"A query parameter or path segment has a value the route cannot read, such as a limit that is not a number or a hostname that is not one. The parameter field of the answer names it.",
		"Fix the value named by parameter; the OpenAPI document lists what each parameter takes."},
	"unknown_parameter": {
		"The request carried a parameter this route does not take, or the same parameter twice. The directory refuses it so that nothing silently means less than it says.",
		"Remove the parameter named by parameter, or give a list as one comma-separated value."},
	"not_found": {
		"There is nothing at this address: no enabled method has this slug, no method is served from this hostname, or the route does not exist.",
		"Check the spelling, or browse the directory from its home page."},
	"method_not_allowed": {
		"The directory is read-only: it answers GET, HEAD and OPTIONS only. The Allow header lists what the address takes.",
		"Use GET."},
	"rate_limited": {
		"This caller sent more searches than its share allows. The plain list, every method and every merchant still answer.",
		"Wait the number of seconds in Retry-After, or use the list with filters, which is not limited."},
	"search_allowance_exhausted": {
		"Today's allowance of new search queries is spent; queries already seen and exact names still answer. It renews at midnight UTC.",
		"Wait the number of seconds in Retry-After, search for an exact method or provider name, or use the list with filters."},
	"search_unavailable": {
		"No search model can answer right now. The plain list, every method and every merchant still answer.",
		"Retry after the number of seconds in Retry-After, or use the list with filters."},
	"database_unavailable": {
		"The service cannot reach its database right now, so the authenticated API cannot read or record anything. The public directory, its pages and the published files still answer from the last snapshot.",
		"Retry after the number of seconds in Retry-After; a write retried with the same body, client id or Idempotency-Key is applied once."},
	"internal": {
		"Something went wrong on the service's side. It was logged under the request id of the answer.",
		"Retry in a moment; if it persists, report the request id."},
}
