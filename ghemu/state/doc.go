// Package state is the GitHub emulator's world: the hosted App, accounts,
// installations and their tokens, repositories with everything in them (labels,
// issues, pull requests, comments, reviews, check runs, commit statuses, workflow
// runs), the webhook deliveries and the manifest flow's codes. It is the only place
// that holds them: the REST API, the web view, the Actions runner and the webhook
// sender reach them through the World's and the Repo's methods, and read and set the
// fields of the records those hand out. It also keeps the world in the state
// directory (state.json and the App's key), and holds the rules GitHub applies that
// read only the world (roles, permission levels, what branch protection asks of a
// merge).
//
// # Concurrency
//
// One lock, the Store's, guards the World and every record reachable from it. The
// only way in is Store.Do(fn): fn runs with the lock held, and if it changed the world
// (a method that changes it, or MarkChanged after setting a record's fields), the world
// is saved before the lock is let go. So a transaction sees a consistent world and
// leaves one, a change and the webhooks it sends are one step, and deliveries keep the
// order of the changes.
//
//   - Records (*Repo, *Issue, *WorkflowRun, …) are read and written only inside Do. A
//     pointer to one may be kept across transactions (the local runner keeps its run's),
//     but is dereferenced only inside one. Whatever leaves a transaction for later use
//     (a page's view model, a RunInfo, a delivery's payload) is copied out inside it.
//   - Do is not reentrant. Code running inside it gets the *World; it never calls Do,
//     nor anything that does (the Emulator's methods, actions.Actions.Run, …).
//   - Every other lock of the emulator is a leaf: it is taken inside Do or without it,
//     and nothing takes the state lock while holding it. They are the webhook sender's
//     (its queue and the deliveries to drop), the Actions runner's (which runs it holds,
//     whether each started, the channel that wakes WaitRun), the REST API's rate
//     limiter, the git commit cache's (render.Commits), the web view's sessions, and
//     the git server's per-repository ref locks, which REST routes that move refs or
//     merge take inside Do and which the git server never holds while it calls the
//     emulator back. The
//     order is therefore always: the state lock, then one of those.
//   - What runs with the state lock held, as it did before the emulator was split:
//     a whole REST request, from authentication to its webhooks, including the git
//     commands some routes need (reading refs and files, merging, creating and moving
//     refs, the diff a review comment is checked against, the merge a pull request's
//     mergeability comes from, the commits a push webhook lists, a commit cache miss);
//     a web view form's change (package conversation, as the REST route does it); the
//     git server's callbacks (who may fetch or push, protected branches, the pull
//     requests a push moves); a job's directory and event file; the manifest flow's
//     key file. What never does: sending a webhook over HTTP, a job's process, the web
//     view's git diffs and page writing, and writing a REST answer to its client.
package state
