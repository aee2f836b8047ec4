package repoconfig

// ReviewerKeys are the keys of the reviewer's mapping, which Reviewer.UnmarshalYAML
// reads itself: the schema's tests check the schema names exactly these.
var ReviewerKeys = reviewerKeys
