// The cheapest extender kube-scheduler can call: filter keeps every node it is offered, prioritize has
// no preference. It reads each request as kube-scheduler sends it (nodeCacheCapable: node names), so
// a scheduler calling it pays exactly what the HTTP extender mechanism costs, with no policy behind it.
// Used by benchmarks/scheduler_throughput.py as the floor an extender cannot go below.
package main

import (
	"encoding/json"
	"log"
	"net/http"
	"os"
)

type extenderArgs struct {
	NodeNames *[]string
}

type filterResult struct {
	NodeNames   []string          `json:"NodeNames"`
	FailedNodes map[string]string `json:"FailedNodes"`
	Error       string            `json:"Error"`
}

func filter(w http.ResponseWriter, r *http.Request) {
	var args extenderArgs
	if err := json.NewDecoder(r.Body).Decode(&args); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	result := filterResult{NodeNames: []string{}, FailedNodes: map[string]string{}}
	if args.NodeNames != nil {
		result.NodeNames = *args.NodeNames
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(result); err != nil {
		log.Print(err)
	}
}

func prioritize(w http.ResponseWriter, r *http.Request) {
	var args extenderArgs
	if err := json.NewDecoder(r.Body).Decode(&args); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if _, err := w.Write([]byte("[]\n")); err != nil {
		log.Print(err)
	}
}

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: stub-extender PORT")
	}
	http.HandleFunc("/filter", filter)
	http.HandleFunc("/prioritize", prioritize)
	log.Fatal(http.ListenAndServe("127.0.0.1:"+os.Args[1], nil))
}
