package rest

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/render"
	"github.com/bumperdev/bumper/ghemu/state"
)

func renderDelivery(d *state.Delivery, full bool) obj {
	o := obj{"id": d.ID, "guid": d.GUID, "delivered_at": render.TS(d.DeliveredAt), "redelivery": d.Redelivery,
		"duration": d.Duration, "status": d.Status, "status_code": d.StatusCode, "event": d.Event,
		"action": render.NilIfEmpty(d.Action), "installation_id": render.NilIfZero(d.Installation),
		"repository_id": render.NilIfZero(d.RepoID)}
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

// listDeliveries lists attempted deliveries, newest first, as GitHub does: paginated by
// cursor (the ID of a page's first delivery, in the Link header's rel="next"), and
// filtered by status (success: 200-399, failure: 400-599; a broken connection, code 0,
// is in neither).
func (a *API) listDeliveries(w http.ResponseWriter, r *http.Request, c *call) {
	q := r.URL.Query()
	per := 30
	if s := q.Get("per_page"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			apierr.Write(w, apierr.Validation("", "per_page", "invalid", "per_page must be a positive integer"))
			return
		}
		per = min(v, 100)
	}
	var from int64 = math.MaxInt64
	if s := q.Get("cursor"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 1 {
			apierr.Write(w, apierr.Validation("", "cursor", "invalid", "cursor is not one this API returned"))
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
		apierr.Write(w, apierr.Validation("", "status", "invalid", "status must be success or failure"))
		return
	}
	var list []*state.Delivery
	all := c.st.Deliveries()
	for i := len(all) - 1; i >= 0; i-- {
		d := all[i]
		if d.Status == "pending" || d.ID > from || d.StatusCode < lo || d.StatusCode > hi {
			continue
		}
		if len(list) == per {
			q.Set("cursor", strconv.FormatInt(d.ID, 10))
			q.Set("per_page", strconv.Itoa(per))
			w.Header().Set("Link", fmt.Sprintf(`<%s%s?%s>; rel="next"`, c.st.BaseURL(), r.URL.Path, q.Encode()))
			break
		}
		list = append(list, d)
	}
	out := make([]obj, 0, len(list))
	for _, d := range list {
		out = append(out, renderDelivery(d, false))
	}
	apierr.WriteJSON(w, http.StatusOK, out)
}

func (c *call) deliveryParam() *state.Delivery {
	id, err := strconv.ParseInt(c.params["delivery_id"], 10, 64)
	if err != nil {
		return nil
	}
	return c.st.Delivery(id)
}

func (a *API) getDelivery(w http.ResponseWriter, r *http.Request, c *call) {
	d := c.deliveryParam()
	if d == nil {
		apierr.Write(w, apierr.NotFound())
		return
	}
	apierr.WriteJSON(w, http.StatusOK, renderDelivery(d, true))
}

func (a *API) redeliver(w http.ResponseWriter, r *http.Request, c *call) {
	d := c.deliveryParam()
	if d == nil {
		apierr.Write(w, apierr.NotFound())
		return
	}
	a.hooks.Redeliver(c.st, d)
	apierr.WriteJSON(w, http.StatusAccepted, obj{})
}
