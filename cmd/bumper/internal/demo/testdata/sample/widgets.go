// Package widgets counts the widgets in a warehouse's boxes.
package widgets

// Total returns how many widgets the boxes hold, each element being one box's count.
func Total(boxes []int) int {
	total := 0
	for i := 1; i < len(boxes); i++ {
		total += boxes[i]
	}
	return total
}
