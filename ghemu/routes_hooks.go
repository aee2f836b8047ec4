package ghemu

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
)

func (e *Emulator) renderDelivery(d *delivery, full bool) obj {
	o := obj{"id": d.ID, "guid": d.GUID, "delivered_at": ts(d.DeliveredAt), "redelivery": d.Redelivery,
		"duration": d.Duration, "status": d.Status, "status_code": d.StatusCode, "event": d.Event,
		"action": nilIfEmpty(d.Action), "installation_id": nilIfZero(d.Installation),
		"repository_id": nilIfZero(d.RepoID)}
	if full {
		var payload any
		_ = json.Unmarshal(d.Payload, &payload)
		headers := obj{}
		for k, v := range d.Headers {
			headers[k] = v
		}
		o["request"] = obj{"headers": headers, "payload": payload}
		o["response"] = obj{"headers": obj{}, "payload": d.Response}
	}
	return o
}

func nilIfZero(v int64) any {
	if v == 0 {
		return nil
	}
	return v
}

// listDeliveries lists attempted deliveries, newest first, as GitHub does: paginated by
// cursor (the ID of a page's first delivery, in the Link header's rel="next"), and
// filtered by status (success: 200-399, failure: 400-599; a broken connection, code 0,
// is in neither).
func (e *Emulator) listDeliveries(w http.ResponseWriter, r *http.Request, c *call) {
	q := r.URL.Query()
	per := 30
	if s := q.Get("per_page"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			writeError(w, errValidation("", "per_page", "invalid", "per_page must be a positive integer"))
			return
		}
		per = min(v, 100)
	}
	var from int64 = math.MaxInt64
	if s := q.Get("cursor"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 1 {
			writeError(w, errValidation("", "cursor", "invalid", "cursor is not one this API returned"))
			return
		}
		from = v
	}
	lo, hi := 0, 0
	switch q.Get("status") {
	case "":
		lo, hi = math.MinInt, math.MaxInt
	case "success":
		lo, hi = 200, 399
	case "failure":
		lo, hi = 400, 599
	default:
		writeError(w, errValidation("", "status", "invalid", "status must be success or failure"))
		return
	}
	var list []*delivery
	for i := len(e.st.Deliveries) - 1; i >= 0; i-- {
		d := e.st.Deliveries[i]
		if d.Status == "pending" || d.ID > from || d.StatusCode < lo || d.StatusCode > hi {
			continue
		}
		if len(list) == per {
			q.Set("cursor", strconv.FormatInt(d.ID, 10))
			q.Set("per_page", strconv.Itoa(per))
			w.Header().Set("Link", fmt.Sprintf(`<%s%s?%s>; rel="next"`, e.baseURL, r.URL.Path, q.Encode()))
			break
		}
		list = append(list, d)
	}
	out := make([]obj, 0, len(list))
	for _, d := range list {
		out = append(out, e.renderDelivery(d, false))
	}
	writeJSON(w, http.StatusOK, out)
}

func (e *Emulator) deliveryParam(c *call) *delivery {
	id, err := strconv.ParseInt(c.params["delivery_id"], 10, 64)
	if err != nil {
		return nil
	}
	return e.findDelivery(id)
}

func (e *Emulator) getDelivery(w http.ResponseWriter, r *http.Request, c *call) {
	d := e.deliveryParam(c)
	if d == nil {
		writeError(w, errNotFound())
		return
	}
	writeJSON(w, http.StatusOK, e.renderDelivery(d, true))
}

func (e *Emulator) redeliver(w http.ResponseWriter, r *http.Request, c *call) {
	d := e.deliveryParam(c)
	if d == nil {
		writeError(w, errNotFound())
		return
	}
	e.redeliverLocked(d)
	c.mutated = true
	writeJSON(w, http.StatusAccepted, obj{})
}
