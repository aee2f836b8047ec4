// Package broken does not compile.
package broken

func F() int { return "not an int" }
