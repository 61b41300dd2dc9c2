package analyze

// WindowSeries is what the HTML report's window chart draws of a surface
// (Config.Charts): the primary address's answered requests, in send
// order, each as the uncertainty-interval model of the analysis judged it
// against the surface's limit and window when the server counted it (the
// one model of the verdict: a forged-header probe is uncertain, as the
// checks hold it).
type WindowSeries struct {
	Points []WindowPoint
}

// WindowPoint is one answered request of a WindowSeries: 24 bytes, as a
// run's worth of them is kept.
type WindowPoint struct {
	// Start is when it was sent (Unix ns).
	Start int64
	// Definite and Ambiguous are the other requests surely and possibly
	// in the server's window when it counted this one; DefiniteAdmitted
	// counts only the admitted ones of Definite.
	Definite, Ambiguous, DefiniteAdmitted int32
	// Admitted and Refused say how it was answered: 2xx, 429.
	Admitted, Refused bool
	// Leak is an admission the window provably forbade; FalseThrottle a
	// refusal it provably allowed.
	Leak, FalseThrottle bool
}

// add takes a request the primary's model judged.
func (w *WindowSeries) add(j *judged) {
	r := &j.Record
	w.Points = append(w.Points, WindowPoint{Start: r.Start, Definite: j.Definite, Ambiguous: j.Ambiguous, DefiniteAdmitted: j.DefiniteAdmitted,
		Admitted: r.Admitted(), Refused: r.Refused(), Leak: j.Leak, FalseThrottle: j.FalseThrottle})
}
