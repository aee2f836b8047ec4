// Package authz decides who may ask Bumper for what: repository permission levels as
// GitHub's collaborator-permission API reports them, and the rule for bots.
package authz

import (
	"strings"
)

// levels ranks GitHub's repository roles; role names (maintain, triage) are finer than
// the permission field (which folds them into write and read).
var levels = map[string]int{"none": 0, "read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5}

// Effective is the level of a collaborator from the API's permission and role_name
// fields: the role name when it is a known role, else the permission. Unknown values
// count as none, so a surprise from the API never grants anything.
func Effective(permission, roleName string) string {
	if _, ok := levels[strings.ToLower(roleName)]; ok {
		return strings.ToLower(roleName)
	}
	if _, ok := levels[strings.ToLower(permission)]; ok {
		return strings.ToLower(permission)
	}
	return "none"
}

// AtLeast reports whether level meets min. An unknown min fails closed.
func AtLeast(level, min string) bool {
	need, ok := levels[min]
	if !ok || need == 0 {
		return false
	}
	return levels[level] >= need
}

// IsBot reports whether a login or account type is a bot's.
func IsBot(login, accountType string) bool {
	return strings.EqualFold(accountType, "Bot") || strings.HasSuffix(strings.ToLower(login), "[bot]")
}

// BotAllowed reports whether a bot's commands count: only when the repository names it.
// Bumper's own login is never allowed, so it cannot approve its own work.
func BotAllowed(login, self string, allowed []string) bool {
	if strings.EqualFold(login, self) {
		return false
	}
	for _, a := range allowed {
		if strings.EqualFold(a, login) {
			return true
		}
	}
	return false
}
