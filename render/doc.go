// Package render is the generic half of a model-backed agent: it turns the
// recorded steps of a run into a provider-neutral conversation, and a model's
// reply back into a Decision. The driver never calls it; an agent does.
//
// An agent is stateless between steps, so everything the model sees is
// rebuilt from the record each time: an opening, then for each step that has
// a decision an assistant turn (the reason and the tool use, under an id
// synthesized from the step) and a user turn answering it (the tool result,
// or a nudge when the decision could not be executed). Only the most recent
// results are shown in full; older ones and oversized ones are shown as their
// summaries, which keeps a long run's context bounded.
//
// Decide never lets a reply cut off by its output cap, or refused, execute
// anything, even if the tool call in it happens to parse. Agent puts the two
// halves together around the step's accounted model handle.
package render
