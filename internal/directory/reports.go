package directory

// Reports are what paying agents and their people reported of a seller's deliveries,
// with the paid calls the service itself recorded as not delivered. Each report is
// about one settled payment and weighs what it paid; a payer's reports on one seller
// count once a UTC day. They are evidence, shown and counted in the score by a
// documented rule; they never authorise a payment.
type Reports struct {
	// Received is how many payments were reported; Observed how many paid calls the
	// service itself recorded as not delivered, reported or not.
	Received int `json:"received"`
	Observed int `json:"observed_not_delivered"`
	// Counted is how many reports count: one per payer, seller and UTC day. By
	// outcome: Delivered (as described), Wrong (delivered but wrong or useless) and
	// NotDelivered.
	Counted      int `json:"counted"`
	Delivered    int `json:"delivered"`
	Wrong        int `json:"wrong"`
	NotDelivered int `json:"not_delivered"`
	// Payers is how many people the counted reports come from.
	Payers int `json:"payers"`
	// Paid is the money the counted reports weigh, in US dollars.
	Paid string `json:"paid"`
	// Rates are the counted reports' outcomes weighted by the money paid.
	Rates ReportRates `json:"rates"`
	// MovesScore is set once the reports pass the floor at which they count in the
	// score (trust.ReportFloor reports from trust.ReportPayersFloor payers).
	MovesScore bool `json:"moves_score"`
	// Weeks are the counted reports of the last twelve weeks (Monday to Sunday,
	// UTC), oldest first.
	Weeks []ReportWeek `json:"weeks"`
}

// ReportRates are shares of the money the counted reports weigh, each from 0 to 1.
type ReportRates struct {
	Delivered    float64 `json:"delivered"`
	Wrong        float64 `json:"wrong"`
	NotDelivered float64 `json:"not_delivered"`
}

// ReportWeek is one week's counted reports by outcome.
type ReportWeek struct {
	Week         string `json:"week"` // its Monday, as 2006-01-02
	Delivered    int    `json:"delivered"`
	Wrong        int    `json:"wrong"`
	NotDelivered int    `json:"not_delivered"`
}

// ServiceDemand is the use the service itself saw of a seller over the last 30 days:
// the payments it settled and the people they came from. Demand is people coming
// back: a payer of one call, or of a burst of calls on one day, is the pattern of a
// wallet made to look like demand. So Repeat counts the payers who paid on two UTC
// days or more, and Organic counts those in full and the others a quarter each
// (rounded down), however many times they paid on their one day.
type ServiceDemand struct {
	Settled int `json:"settled_30d"`
	Payers  int `json:"payers_30d"`
	Repeat  int `json:"repeat_payers_30d"`
	Organic int `json:"organic_payers_30d"`
}

// NewServiceDemand is the demand of settled payments from payers of whom repeat paid
// on two UTC days or more; nil without any.
func NewServiceDemand(settled, payers, repeat int) *ServiceDemand {
	if settled == 0 {
		return nil
	}
	return &ServiceDemand{Settled: settled, Payers: payers, Repeat: repeat, Organic: repeat + (payers-repeat)/4}
}

// OrganicPayers is d's organic payers, 0 for none (d nil).
func (d *ServiceDemand) OrganicPayers() int64 {
	if d == nil {
		return 0
	}
	return int64(d.Organic)
}
