package ghemu

import (
	"encoding/json"
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

// listDeliveries lists attempted deliveries, newest first, as GitHub does.
func (e *Emulator) listDeliveries(w http.ResponseWriter, r *http.Request, c *call) {
	var list []*delivery
	for i := len(e.st.Deliveries) - 1; i >= 0; i-- {
		if d := e.st.Deliveries[i]; d.Status != "pending" {
			list = append(list, d)
		}
	}
	writeList(e, w, r, list, func(d *delivery) obj { return e.renderDelivery(d, false) })
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
