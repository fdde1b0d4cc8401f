// The same component leaving the value to Angular's own sanitizing.
import { Component } from "@angular/core";
import { ActivatedRoute } from "@angular/router";
import { DomSanitizer } from "@angular/platform-browser";

@Component({ selector: "app-search-safe", template: "<div [innerHTML]=\"heading\"></div>" })
export class SafeSearchComponent {
  heading = "";
  icon: unknown;

  constructor(private route: ActivatedRoute, private sanitizer: DomSanitizer) {}

  ngOnInit(): void {
    const q: string = this.route.snapshot.queryParams.q;
    this.heading = "Results for " + q;
    this.icon = this.sanitizer.bypassSecurityTrustHtml("<svg><circle r=\"4\"/></svg>");
  }
}
